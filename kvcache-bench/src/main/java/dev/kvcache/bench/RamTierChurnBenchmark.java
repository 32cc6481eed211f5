package dev.kvcache.bench;

import dev.kvcache.BlockKey;
import dev.kvcache.CacheStats;
import dev.kvcache.PutStatus;
import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import java.nio.ByteBuffer;
import java.util.SplittableRandom;
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
import org.openjdk.jmh.infra.ThreadParams;

/**
 * Fragmentation under churn: puts of mixed sizes (twelve sizes from 64 KiB to 4 MiB, none a whole
 * number of granules) over a key space three times the tier, so that every put evicts and free
 * space is scattered. The baseline copies the same sizes into a plain direct region at random
 * offsets. The ratio shows what allocation, eviction and compaction cost together; the tear-down
 * prints how many bytes compaction moved per byte put and how many puts were refused.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class RamTierChurnBenchmark {

  private static final int[] SIZES = sizes(64 << 10, 4 << 20, 12);

  @Param({"268435456"})
  public long capacityBytes;

  private RamTier tier;
  private ByteBuffer region;
  private int keySpace;

  @Setup(Level.Trial)
  public void setUp() {
    tier = new RamTier(RamTierConfig.ofCapacity(capacityBytes).withMaxBlockBytes(SIZES[SIZES.length - 1]));
    region = ByteBuffer.allocateDirect((int) Math.min(capacityBytes, 1 << 30));
    long average = 0;
    for (int size : SIZES) {
      average += size / SIZES.length;
    }
    keySpace = (int) (3 * capacityBytes / average);
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    CacheStats s = tier.stats();
    System.out.printf(
        "%nchurn: %d puts, %d rejected, %d evictions, %d compactions moved %d bytes"
            + " (%.3f bytes moved per byte put)%n",
        s.puts(), s.rejections(), s.evictions(), s.compactions(), s.bytesCompacted(),
        (double) s.bytesCompacted() / Math.max(1, tier.stats().puts() * averageSize()));
    tier.close();
  }

  private static long averageSize() {
    long sum = 0;
    for (int size : SIZES) {
      sum += size;
    }
    return sum / SIZES.length;
  }

  /** Per-thread source views of each size and a random stream. */
  @State(Scope.Thread)
  public static class ThreadState {
    ByteBuffer[] views;
    SplittableRandom random;

    @Setup(Level.Trial)
    public void setUp(ThreadParams thread) {
      int seed = thread.getThreadIndex() + 1;
      ByteBuffer src = Blocks.randomDirect(SIZES[SIZES.length - 1], seed);
      views = new ByteBuffer[SIZES.length];
      for (int i = 0; i < SIZES.length; i++) {
        views[i] = src.slice(0, SIZES[i]);
      }
      random = new SplittableRandom(seed);
    }
  }

  @Benchmark
  public void baselinePut(ThreadState t) {
    ByteBuffer src = t.views[t.random.nextInt(SIZES.length)];
    int offset = t.random.nextInt(region.capacity() - src.remaining());
    region.put(offset, src, 0, src.remaining());
  }

  @Benchmark
  public PutStatus put(ThreadState t) {
    ByteBuffer src = t.views[t.random.nextInt(SIZES.length)];
    return tier.put(BlockKey.of(7, t.random.nextInt(keySpace)), src);
  }

  /** {@code count} sizes spaced evenly on a log scale, each 100 bytes short of a granule multiple. */
  private static int[] sizes(int min, int max, int count) {
    int[] sizes = new int[count];
    for (int i = 0; i < count; i++) {
      double size = min * Math.pow((double) max / min, (double) i / (count - 1));
      sizes[i] = (int) size - 100;
    }
    return sizes;
  }
}
