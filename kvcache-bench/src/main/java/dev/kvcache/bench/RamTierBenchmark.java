package dev.kvcache.bench;

import dev.kvcache.BlockKey;
import dev.kvcache.Namespace;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamPolicy;
import dev.kvcache.ram.RamTierConfig;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
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
import org.openjdk.jmh.infra.Blackhole;

/**
 * The RAM tier's put, lease-get and get-into, beside a baseline that copies the same bytes between
 * plain direct buffers in the same run.
 *
 * <p>The working set (default 256 MiB) is larger than the last-level cache, so every operation
 * moves its block through main memory, as a KV cache does. The baseline keeps the same number of
 * blocks in separate direct buffers: {@code baselinePut} copies the source block into slot i,
 * {@code baselineGet} copies slot i into the destination; the tier's {@code put} and {@code
 * getInto} move exactly those bytes, so their ratio to the baseline is the tier's own cost
 * (allocation, index, policy, reference counting). Run with {@code -t 1} and {@code -t 2}.
 *
 * <p>{@code quotas} spreads the working set over that many namespaces, each with a RAM quota that
 * holds its share ({@link RamTierConfig#quotas()}), against {@code 0}: the same keys, namespaced
 * alike, in a tier without quotas. Their ratio is the cost of quotas on each operation.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class RamTierBenchmark {

  @Param({"65536", "1048576", "4194304", "33554432"})
  public int blockSizeBytes;

  @Param({"268435456"})
  public long workingSetBytes;

  /** The tier's {@link RamPolicy}: its index and eviction order are the tier's own cost here. */
  @Param({"LRU", "W_TINY_LFU"})
  public String policy;

  /** Namespaces with a quota that the working set is spread over; 0 for a tier without quotas. */
  @Param({"0"})
  public int quotas;

  private RamTier tier;
  private BlockKey[] keys;
  private ByteBuffer[] baselineSlots;

  @Setup(Level.Trial)
  public void setUp() {
    int blocks = Blocks.blocksIn(workingSetBytes, blockSizeBytes);
    long capacity = (long) blocks * blockSizeBytes + (long) blocks * blockSizeBytes / 4
        + 4L * blockSizeBytes;
    Namespace[] namespaces = new Namespace[Math.max(1, quotas)];
    Map<Namespace, Long> quota = new HashMap<>();
    for (int n = 0; n < namespaces.length; n++) {
      namespaces[n] = Namespace.of("bench", "bf16", "v1", "tenant-" + n);
      if (quotas > 0) {
        // its share of the blocks, as the capacity above gives the whole set its room
        quota.put(namespaces[n], capacity / (quotas + 1));
      }
    }
    tier = new RamTier(RamTierConfig.ofCapacity(capacity).withMaxBlockBytes(blockSizeBytes)
        .withPolicy(RamPolicy.valueOf(policy)).withQuotas(quota));
    keys = new BlockKey[blocks];
    baselineSlots = new ByteBuffer[blocks];
    ByteBuffer src = Blocks.randomDirect(blockSizeBytes, 42);
    for (int i = 0; i < blocks; i++) {
      keys[i] = BlockKey.ofRaw(namespaces[i % namespaces.length],
          ByteBuffer.allocate(16).putLong(0x5eedL).putLong(i).array());
      if (tier.put(keys[i], src) != PutStatus.STORED) {
        throw new IllegalStateException("working set does not fit: block " + i);
      }
      baselineSlots[i] = ByteBuffer.allocateDirect(blockSizeBytes);
      baselineSlots[i].put(0, src, 0, blockSizeBytes);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    tier.close();
  }

  @Benchmark
  public void baselinePut(ThreadBuffers t) {
    baselineSlots[t.nextIndex(baselineSlots.length)].put(0, t.src, 0, blockSizeBytes);
  }

  @Benchmark
  public void baselineGet(ThreadBuffers t) {
    t.dst.put(0, baselineSlots[t.nextIndex(baselineSlots.length)], 0, blockSizeBytes);
  }

  @Benchmark
  public PutStatus put(ThreadBuffers t) {
    return tier.put(keys[t.nextIndex(keys.length)], t.src);
  }

  @Benchmark
  public GetStatus getInto(ThreadBuffers t) {
    t.dst.clear();
    return tier.getInto(keys[t.nextIndex(keys.length)], t.dst);
  }

  @Benchmark
  public void leaseGet(ThreadBuffers t, Blackhole bh) {
    try (BlockLease lease = tier.get(keys[t.nextIndex(keys.length)])) {
      ByteBuffer bytes = lease.bytes();
      bh.consume(bytes.getLong(0));
    }
  }
}
