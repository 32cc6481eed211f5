package dev.kvcache.bench;

import dev.kvcache.BlockKey;
import dev.kvcache.PutStatus;
import dev.kvcache.disk.DiskTier;
import dev.kvcache.disk.DiskTierConfig;
import dev.kvcache.disk.SyncPolicy;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
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

/**
 * Latency of a disk tier put under each sync policy (JMH's sample mode gives the percentiles):
 * with {@code ALWAYS}, the put returns only once the block and its journal entry are on the
 * device. Keys are new on every put, so nothing is skipped as unchanged.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class DiskPutLatencyBenchmark {

  @Param({"NONE", "PERIODIC", "ALWAYS"})
  public SyncPolicy policy;

  @Param({"1048576"})
  public int blockSizeBytes;

  @Param({"1073741824"})
  public long capacityBytes;

  /** Where the tier's directory goes; the work tree's disk by default. */
  @Param({"target/disk-latency"})
  public String baseDir;

  private DiskTier tier;
  private final AtomicLong keys = new AtomicLong();

  /** One source buffer per thread. */
  @State(Scope.Thread)
  public static class Source {
    ByteBuffer block;

    @Setup(Level.Trial)
    public void setUp(DiskPutLatencyBenchmark b) {
      block = Blocks.randomDirect(b.blockSizeBytes, Thread.currentThread().getId());
    }
  }

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    Path base = Path.of(baseDir).toAbsolutePath();
    Blocks.deleteTree(base);
    tier = DiskTier.open(DiskTierConfig.builder(base.resolve("tier"), capacityBytes)
        .minFreeBytes(0).syncPolicy(policy).build());
  }

  @Benchmark
  public PutStatus put(Source source) {
    return tier.put(BlockKey.of(3, keys.incrementAndGet()), source.block);
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    tier.close();
    Blocks.deleteTree(Path.of(baseDir).toAbsolutePath());
  }
}
