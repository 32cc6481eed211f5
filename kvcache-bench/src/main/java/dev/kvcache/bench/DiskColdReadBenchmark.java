package dev.kvcache.bench;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.Namespace;
import dev.kvcache.PutStatus;
import dev.kvcache.disk.DiskTier;
import dev.kvcache.disk.DiskTierConfig;
import dev.kvcache.disk.SyncPolicy;
import dev.kvcache.disk.device.DeviceFile;
import dev.kvcache.disk.device.FileSystemDevice;
import com.sun.nio.file.ExtendedOpenOption;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import dev.kvcache.seal.MasterKeys;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
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
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.runner.IterationType;

/**
 * Reads from the disk tier with its files out of the page cache, beside a plain mapped file of the
 * same bytes. Before each iteration the tier is closed and the plain file unmapped (the kernel
 * keeps pages that a process maps), dirty pages are written back ({@code sync}) and the page
 * cache is dropped ({@code echo 1 > /proc/sys/vm/drop_caches}, which needs root); then the tier
 * is reopened and the file mapped again. One invocation reads the whole working set once:
 * {@code readAll} through {@code getInto} (checksum check and one copy into a direct buffer),
 * {@code leaseAllBatched} through {@code getAll} of 16 keys at a time (leases: the check, no copy),
 * {@code baselineReadAll} copying out of the mapping, {@code preadAll} reading the plain file with
 * {@code pread} through the page cache, and {@code directReadAll} reading it past the page cache
 * ({@code O_DIRECT}) into an aligned buffer, one read per block. {@code order} reads the blocks
 * in the order they were written or in a shuffled one (the same for every method).
 *
 * <p>With {@code -Dkvcache.bench.cpu.out=<file>}, each trial appends a JSON line with the CPU
 * seconds (user and system) the benchmark's process spent in its measurement iterations, page
 * faults, system calls and the tier's IO threads included, and the bytes it read.
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

  /**
   * Which blocks are read, in which order: all in the order written ({@code written}, sequential
   * on the device), all shuffled ({@code shuffled}), or a shuffled sixteenth of them ({@code
   * sparse}: a cache reads a part of what its disk holds).
   */
  @Param({"written", "shuffled", "sparse"})
  public String order;

  /** Whether the tier reads blocks not in the page cache past it (the tier's methods only). */
  @Param({"true"})
  public boolean directReads;

  /**
   * Whether the blocks' namespace is sealed at rest (AES-256-GCM, {@code dev.kvcache.seal.Sealer}):
   * its records are read through the mapping and opened into the destination.
   */
  @Param({"false"})
  public boolean sealed;

  /** The blocks' namespace. */
  private static final Namespace NS = Namespace.of("bench", "bf16", "tp0of1", "disk");
  /** A master key for the sealed runs: 32 bytes of 7, base64. */
  private static final String MASTER_KEY = "1:BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";

  /** Blocks per {@code getAll} of {@code leaseAllBatched}. */
  private static final int BATCH = 16;

  private static final com.sun.management.OperatingSystemMXBean OS =
      (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

  private Path base;
  private DiskTier tier;
  private FileChannel plainFile;
  /** The plain file, mapped through the file system device as the tier maps its own. */
  private DeviceFile plainMapping;
  private ByteBuffer plain;
  private FileChannel directFile;
  private ByteBuffer dst;
  private ByteBuffer alignedDst;
  private int[] readOrder;
  private int blocks;
  private String benchmark;
  private boolean measuring;
  private long cpuNanos;
  private long measuredBytes;

  private DiskTierConfig config() {
    DiskTierConfig.Builder b = DiskTierConfig.builder(base.resolve("tier"), 2 * workingSetBytes)
        .maxBlockBytes(blockSizeBytes).minFreeBytes(0).syncPolicy(SyncPolicy.NONE)
        .scrubBytesPerSecond(0).directReads(directReads);
    if (sealed) {
      b.sealing(MasterKeys.parse(MASTER_KEY), List.of(NS));
    }
    return b.build();
  }

  @Setup(Level.Trial)
  public void setUp(BenchmarkParams params) throws IOException {
    benchmark = params.getBenchmark();
    base = Path.of(baseDir).toAbsolutePath();
    Blocks.deleteTree(base);
    Files.createDirectories(base);
    blocks = Blocks.blocksIn(workingSetBytes, blockSizeBytes);
    ByteBuffer src = Blocks.randomDirect(blockSizeBytes, 13);
    dst = ByteBuffer.allocateDirect(blockSizeBytes);
    int alignment = (int) Files.getFileStore(base).getBlockSize();
    // one block long: an aligned slice of an allocation that happens to be aligned is longer
    alignedDst = ByteBuffer.allocateDirect(blockSizeBytes + alignment).alignedSlice(alignment)
        .slice(0, blockSizeBytes);
    readOrder = readOrder(order, blocks);
    plainFile = FileChannel.open(base.resolve("plain"), StandardOpenOption.CREATE,
        StandardOpenOption.READ, StandardOpenOption.WRITE);
    try (DiskTier filling = DiskTier.open(config())) {
      for (int i = 0; i < blocks; i++) {
        src.putInt(0, i);
        if (filling.put(BlockKey.of(NS, 2, i), src) != PutStatus.STORED) {
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

  /** The blocks {@code order} reads, in that order. */
  private static int[] readOrder(String order, int blocks) {
    int[] all = new int[blocks];
    for (int i = 0; i < blocks; i++) {
      all[i] = i;
    }
    if (order.equals("written")) {
      return all;
    }
    Random random = new Random(17);
    for (int i = blocks - 1; i > 0; i--) {
      int j = random.nextInt(i + 1);
      int t = all[i];
      all[i] = all[j];
      all[j] = t;
    }
    return switch (order) {
      case "shuffled" -> all;
      case "sparse" -> java.util.Arrays.copyOf(all, Math.max(1, blocks / 16));
      default -> throw new IllegalArgumentException(
          "order is written, shuffled or sparse, not " + order);
    };
  }

  @Setup(Level.Iteration)
  public void dropPageCache(IterationParams params) throws IOException, InterruptedException {
    measuring = params.getType() == IterationType.MEASUREMENT;
    if (tier != null) {
      tier.close();
    }
    if (directFile != null) {
      directFile.close();
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
    directFile = FileChannel.open(base.resolve("plain"), StandardOpenOption.READ,
        ExtendedOpenOption.DIRECT);
  }

  @Benchmark
  public int readAll() {
    long cpu = OS.getProcessCpuTime();
    int hits = 0;
    for (int i : readOrder) {
      if (tier.getInto(BlockKey.of(NS, 2, i), dst.clear()) == GetStatus.HIT) {
        hits++;
      }
    }
    if (hits != readOrder.length) {
      throw new IllegalStateException(hits + " of " + readOrder.length + " blocks read");
    }
    count(cpu);
    return hits;
  }

  @Benchmark
  public long leaseAllBatched() {
    long cpu = OS.getProcessCpuTime();
    long sum = 0;
    List<BlockKey> batch = new ArrayList<>(BATCH);
    for (int from = 0; from < readOrder.length; from += BATCH) {
      batch.clear();
      for (int i = from; i < Math.min(readOrder.length, from + BATCH); i++) {
        batch.add(BlockKey.of(NS, 2, readOrder[i]));
      }
      List<BlockLease> leases = tier.getAll(batch);
      try {
        for (BlockLease lease : leases) {
          if (lease.status() != GetStatus.HIT) {
            throw new IllegalStateException(lease.key() + " was not read");
          }
          sum += lease.bytes().getLong(0);
        }
      } finally {
        leases.forEach(BlockLease::close);
      }
    }
    count(cpu);
    return sum;
  }

  @Benchmark
  public long baselineReadAll() {
    long cpu = OS.getProcessCpuTime();
    long sum = 0;
    for (int i : readOrder) {
      dst.clear().put(0, plain, (int) ((long) i * blockSizeBytes), blockSizeBytes);
      sum += dst.getLong(0);
    }
    count(cpu);
    return sum;
  }

  @Benchmark
  public long preadAll() throws IOException {
    long cpu = OS.getProcessCpuTime();
    long sum = readFile(plainFile, dst);
    count(cpu);
    return sum;
  }

  @Benchmark
  public long directReadAll() throws IOException {
    long cpu = OS.getProcessCpuTime();
    long sum = readFile(directFile, alignedDst);
    count(cpu);
    return sum;
  }

  /** Reads every block of the plain file in {@link #order} into {@code into}, one read each. */
  private long readFile(FileChannel file, ByteBuffer into) throws IOException {
    long sum = 0;
    for (int i : readOrder) {
      into.clear();
      long at = (long) i * blockSizeBytes;
      while (into.hasRemaining()) {
        int n = file.read(into, at + into.position());
        if (n < 0) {
          throw new IOException("the plain file ends before block " + i);
        }
      }
      sum += into.getLong(0);
    }
    return sum;
  }

  private void count(long cpuStart) {
    if (measuring) {
      cpuNanos += OS.getProcessCpuTime() - cpuStart;
      measuredBytes += (long) readOrder.length * blockSizeBytes;
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    String out = System.getProperty("kvcache.bench.cpu.out");
    if (out != null && measuredBytes > 0) {
      Files.writeString(Path.of(out), String.format(Locale.ROOT,
          "{\"benchmark\":\"%s\",\"blockBytes\":%d,\"order\":\"%s\",\"directReads\":%b,"
              + "\"sealed\":%b,\"cpuSeconds\":%.4f,\"bytes\":%d,\"cpuSecondsPerGiB\":%.4f}%n",
          benchmark, blockSizeBytes, order, directReads, sealed,
          cpuNanos / 1e9, measuredBytes, cpuNanos / 1e9 / (measuredBytes / (double) (1L << 30))),
          StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }
    if (directFile != null) {
      directFile.close();
    }
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
