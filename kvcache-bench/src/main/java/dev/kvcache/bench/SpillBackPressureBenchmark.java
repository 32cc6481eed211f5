package dev.kvcache.bench;

import dev.kvcache.BlockKey;
import dev.kvcache.KvCache;
import dev.kvcache.PutStatus;
import dev.kvcache.disk.DiskTier;
import dev.kvcache.disk.DiskTierConfig;
import dev.kvcache.disk.SyncPolicy;
import dev.kvcache.tiered.Durability;
import dev.kvcache.tiered.KvCacheBuilder;
import dev.kvcache.tiered.TieredCache;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
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

/**
 * Writes that outrun the disk: every thread writes blocks of new content as fast as it can, so
 * that once the page cache holds all the dirty bytes the kernel allows, every write waits on the
 * disk. JMH's sample mode gives each write's latency percentiles; the sustained rate is threads ×
 * block size ÷ the mean time. What writes, by {@code stack}:
 *
 * <ul>
 *   <li>{@code file}: {@code FileChannel.write} into new files of 256 MiB, the oldest deleted
 *       beyond the capacity ({@link RotatingFiles}, one series per thread), forced once a second:
 *       the raw writer of the same bytes.
 *   <li>{@code file-fsync}: the same, with a force after every block: a write that answers once
 *       the block is on the device, as the MLPerf Storage benchmark's file backend does.
 *   <li>{@code disk}: puts into the disk tier alone (sync policy {@code PERIODIC}, the default).
 *   <li>{@code ram+disk}, {@code ram-small+disk}: puts into RAM over the same disk tier under the
 *       server's default durability, {@link Durability#WRITE_BEHIND}, with 1 GiB of RAM (the
 *       server's default), 256 MiB or 4 GiB ({@code ram-large+disk}): each put queues a copy for
 *       the disk and waits while too much is queued; {@code spillThreads} write the copies.
 * </ul>
 *
 * Each stack writes into a capacity of {@code capacityBytes}, so the disk tier drops its oldest
 * super-blocks as the file series deletes its oldest files. Blocks per put and bytes written by
 * the tier are printed after each iteration.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class SpillBackPressureBenchmark {

  private static final long FILE_BYTES = 256L << 20;
  private static final long FORCE_EVERY_NANOS = TimeUnit.SECONDS.toNanos(1);

  @Param({"file", "file-fsync", "disk", "ram+disk", "ram-small+disk", "ram-large+disk"})
  public String stack;

  @Param({"2097152", "67108864"})
  public int blockSizeBytes;

  @Param({"8589934592"})
  public long capacityBytes;

  /** Threads writing RAM's queued blocks to the disk tier (the stacks with RAM). */
  @Param({"2"})
  public int spillThreads;

  /** How many blocks write-behind puts may leave unwritten (the stacks with RAM). */
  @Param({"64"})
  public int spillQueueBlocks;

  /** The disk tier's sync policy ({@code PERIODIC}: forced once a second). */
  @Param({"PERIODIC"})
  public String diskSync;

  /** The disk tier's super-block size (its default: 256 MiB). */
  @Param({"268435456"})
  public long superBlockBytes;

  /** Where the files go: the work tree's disk by default. */
  @Param({"target/spill-back-pressure"})
  public String baseDir;

  private Path base;
  private KvCache cache;
  private final AtomicLong keys = new AtomicLong();
  private final AtomicInteger threads = new AtomicInteger();

  /** Each thread's source block, and its own series of files for the file stacks. */
  @State(Scope.Thread)
  public static class Writer {
    ByteBuffer block;
    RotatingFiles files;
    long lastForce;

    @Setup(Level.Trial)
    public void setUp(SpillBackPressureBenchmark b, BenchmarkParams params) throws IOException {
      int n = b.threads.getAndIncrement();
      block = Blocks.randomDirect(b.blockSizeBytes, 17 + n);
      if (b.stack.startsWith("file")) {
        // a thread's share of the capacity, in whole files
        long share = Math.max(2 * FILE_BYTES, b.capacityBytes / params.getThreads());
        files = new RotatingFiles(b.base.resolve("files-" + n), FILE_BYTES, share);
      }
      lastForce = System.nanoTime();
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
      if (files != null) {
        files.close();
      }
    }
  }

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    base = Path.of(baseDir).toAbsolutePath();
    Blocks.deleteTree(base);
    cache = switch (stack) {
      case "file", "file-fsync" -> null;
      case "disk" -> disk();
      case "ram+disk" -> ramOverDisk(1L << 30);
      case "ram-small+disk" -> ramOverDisk(256L << 20);
      case "ram-large+disk" -> ramOverDisk(4L << 30);
      default -> throw new IllegalArgumentException("unknown stack " + stack);
    };
  }

  private KvCache ramOverDisk(long ramBytes) throws IOException {
    return KvCacheBuilder.newBuilder().ramBytes(ramBytes).maxBlockBytes(blockSizeBytes).lowerTier(disk())
        .durability(Durability.WRITE_BEHIND).spillThreads(spillThreads)
        .spillQueueBlocks(spillQueueBlocks).build();
  }

  private DiskTier disk() throws IOException {
    return DiskTier.open(DiskTierConfig.builder(base.resolve("disk"), capacityBytes)
        .maxBlockBytes(blockSizeBytes).minFreeBytes(0).syncPolicy(SyncPolicy.valueOf(diskSync))
        .superBlockBytes(superBlockBytes).build());
  }

  @Benchmark
  public Object write(Writer w) throws IOException {
    long n = keys.incrementAndGet();
    w.block.putLong(0, n); // new content every time: nothing is skipped as unchanged
    if (cache != null) {
      PutStatus status = cache.put(BlockKey.of(6, n), w.block);
      if (status != PutStatus.STORED) {
        throw new IllegalStateException("put " + n + " answered " + status);
      }
      return status;
    }
    int written = w.files.write(w.block);
    long now = System.nanoTime();
    if (stack.equals("file-fsync") || now - w.lastForce > FORCE_EVERY_NANOS) {
      w.files.force();
      w.lastForce = now;
    }
    return written;
  }

  @TearDown(Level.Iteration)
  public void report() {
    if (cache instanceof TieredCache tiered) {
      System.out.println();
      System.out.println("tiered " + stack + ": " + tiered.tieredStats());
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    if (cache != null) {
      cache.close();
    }
    Blocks.deleteTree(base);
  }
}
