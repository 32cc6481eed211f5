package dev.kvcache.bench;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.disk.DiskTier;
import dev.kvcache.disk.DiskTierConfig;
import dev.kvcache.disk.SyncPolicy;
import dev.kvcache.disk.device.DeviceFile;
import dev.kvcache.disk.device.FileSystemDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Reads from the disk tier with its files out of the page cache, beside a plain mapped file of the
 * same bytes. Before each iteration the tier is closed and the plain file unmapped (the kernel
 * keeps pages that a process maps), dirty pages are written back ({@code sync}) and the page
 * cache is dropped ({@code echo 1 > /proc/sys/vm/drop_caches}, which needs root); then the tier
 * is reopened and the file mapped again. One invocation reads the whole working set once:
 * {@code readAll} through {@code getInto} (checksum check and one copy into a direct buffer),
 * {@code baselineReadAll} copying out of the mapping.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class DiskColdReadBenchmark {

  @Param({"262144", "2097152", "33554432"})
  public int blockSizeBytes;

  @Param({"1073741824"})
  public long workingSetBytes;

  /** Where the files go: the work tree's disk (tmpfs has no cold state). */
  @Param({"target/disk-cold"})
  public String baseDir;

  /** Whether to drop the page cache before each iteration (which needs root; off makes reads warm). */
  @Param({"true"})
  public boolean dropPageCache;

  private Path base;
  private DiskTier tier;
  private FileChannel plainFile;
  /** The plain file, mapped through the file system device as the tier maps its own. */
  private DeviceFile plainMapping;
  private ByteBuffer plain;
  private ByteBuffer dst;
  private int blocks;

  private DiskTierConfig config() {
    return DiskTierConfig.builder(base.resolve("tier"), 2 * workingSetBytes)
        .maxBlockBytes(blockSizeBytes).minFreeBytes(0).syncPolicy(SyncPolicy.NONE).build();
  }

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    base = Path.of(baseDir).toAbsolutePath();
    Blocks.deleteTree(base);
    Files.createDirectories(base);
    blocks = Blocks.blocksIn(workingSetBytes, blockSizeBytes);
    ByteBuffer src = Blocks.randomDirect(blockSizeBytes, 13);
    dst = ByteBuffer.allocateDirect(blockSizeBytes);
    plainFile = FileChannel.open(base.resolve("plain"), StandardOpenOption.CREATE,
        StandardOpenOption.READ, StandardOpenOption.WRITE);
    try (DiskTier filling = DiskTier.open(config())) {
      for (int i = 0; i < blocks; i++) {
        src.putInt(0, i);
        if (filling.put(BlockKey.of(2, i), src) != PutStatus.STORED) {
          throw new IllegalStateException("put " + i + " was not stored");
        }
        ByteBuffer b = src.duplicate();
        long at = (long) i * blockSizeBytes;
        while (b.hasRemaining()) {
          at += plainFile.write(b, at);
        }
      }
    }
  }

  @Setup(Level.Iteration)
  public void dropPageCache() throws IOException, InterruptedException {
    if (tier != null) {
      tier.close();
    }
    if (plain != null) {
      plainMapping.unmap(plain);
      plainMapping.close();
      plain = null;
    }
    Process sync = new ProcessBuilder("sync").inheritIO().start();
    if (sync.waitFor() != 0) {
      throw new IllegalStateException("sync failed");
    }
    if (dropPageCache) {
      Path dropCaches = Path.of("/proc/sys/vm/drop_caches");
      if (!Files.isWritable(dropCaches)) {
        throw new IllegalStateException("cannot write " + dropCaches + " to drop the page cache: "
            + "run as root, or with -p dropPageCache=false for warm reads");
      }
      Files.writeString(dropCaches, "1");
    }
    tier = DiskTier.open(config());
    plainMapping = FileSystemDevice.INSTANCE.open(base.resolve("plain"), false);
    plain = plainMapping.map((long) blocks * blockSizeBytes);
  }

  @Benchmark
  public int readAll() {
    int hits = 0;
    for (int i = 0; i < blocks; i++) {
      if (tier.getInto(BlockKey.of(2, i), dst.clear()) == GetStatus.HIT) {
        hits++;
      }
    }
    if (hits != blocks) {
      throw new IllegalStateException(hits + " of " + blocks + " blocks read");
    }
    return hits;
  }

  @Benchmark
  public long baselineReadAll() {
    long sum = 0;
    for (int i = 0; i < blocks; i++) {
      dst.clear().put(0, plain, (int) ((long) i * blockSizeBytes), blockSizeBytes);
      sum += dst.getLong(0);
    }
    return sum;
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    if (tier != null) {
      tier.close();
    }
    if (plain != null) {
      plainMapping.unmap(plain);
      plainMapping.close();
    }
    plainFile.close();
    Blocks.deleteTree(base);
  }
}
