package dev.kvcache.bench;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.disk.DiskTier;
import dev.kvcache.disk.DiskTierConfig;
import dev.kvcache.disk.SyncPolicy;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
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
 * Reads from the disk tier, with its files in the page cache: {@code getInto} (checksum check and
 * one copy into a direct buffer) and {@code leaseGet} (checksum check, a zero-copy view) beside
 * {@code baselineGet}, a copy of the same bytes out of a plain mapped file. The ratio is what the
 * index, the pinning and the checksum cost on a read.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class DiskReadBenchmark {

  @Param({"65536", "1048576", "4194304"})
  public int blockSizeBytes;

  @Param({"268435456"})
  public long workingSetBytes;

  /** Where the files go; the work tree's disk by default. */
  @Param({"target/disk-read"})
  public String baseDir;

  private DiskTier tier;
  private FileChannel plainFile;
  private MappedByteBuffer plain;
  private ByteBuffer dst;
  private int blocks;
  private int next;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    Path base = Path.of(baseDir).toAbsolutePath();
    Blocks.deleteTree(base);
    blocks = Blocks.blocksIn(workingSetBytes, blockSizeBytes);
    tier = DiskTier.open(DiskTierConfig.builder(base.resolve("tier"), 4 * workingSetBytes)
        .minFreeBytes(0).syncPolicy(SyncPolicy.NONE).build());
    java.nio.file.Files.createDirectories(base);
    plainFile = FileChannel.open(base.resolve("plain"), StandardOpenOption.CREATE,
        StandardOpenOption.READ, StandardOpenOption.WRITE);
    plain = plainFile.map(FileChannel.MapMode.READ_WRITE, 0, (long) blocks * blockSizeBytes);
    ByteBuffer src = Blocks.randomDirect(blockSizeBytes, 5);
    for (int i = 0; i < blocks; i++) {
      src.putInt(0, i);
      if (tier.put(BlockKey.of(2, i), src) != PutStatus.STORED) {
        throw new IllegalStateException("put " + i + " was not stored");
      }
      plain.put(i * blockSizeBytes, src, 0, blockSizeBytes);
    }
    dst = ByteBuffer.allocateDirect(blockSizeBytes);
  }

  private int nextBlock() {
    int i = next;
    next = i + 1 == blocks ? 0 : i + 1;
    return i;
  }

  @Benchmark
  public ByteBuffer baselineGet() {
    int i = nextBlock();
    return dst.clear().put(0, plain, i * blockSizeBytes, blockSizeBytes);
  }

  @Benchmark
  public GetStatus getInto() {
    return tier.getInto(BlockKey.of(2, nextBlock()), dst.clear());
  }

  @Benchmark
  public long leaseGet() {
    try (BlockLease lease = tier.get(BlockKey.of(2, nextBlock()))) {
      return lease.bytes().getLong(0);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    tier.close();
    plainFile.close();
    Blocks.deleteTree(Path.of(baseDir).toAbsolutePath());
  }
}
