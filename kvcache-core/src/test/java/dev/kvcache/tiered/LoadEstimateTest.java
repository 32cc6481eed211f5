package dev.kvcache.tiered;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.CacheStats;
import dev.kvcache.GetStatus;
import dev.kvcache.PrefixLocation;
import dev.kvcache.PrefixLocation.Run;
import dev.kvcache.PutStatus;
import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.spi.LoadRate;
import dev.kvcache.spi.Tier;
import dev.kvcache.testkit.Payloads;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A lookup's load-time estimate follows the tier that holds the blocks, here one slowed on purpose. */
class LoadEstimateTest {

  private static final int BLOCK = 64 << 10;

  private SlowTier lower;
  private TieredCache cache;
  private int nextKey;

  @BeforeEach
  void open() {
    lower = new SlowTier(new RamTier(RamTierConfig.ofCapacity(64L << 20).withMaxBlockBytes(1 << 20)));
    cache = new TieredCache(RamTierConfig.ofCapacity(16L << 20).withMaxBlockBytes(1 << 20), lower,
        new TieredCacheConfig(64, Duration.ofSeconds(30), true, true, Durability.RAM_FIRST));
  }

  @AfterEach
  void close() {
    cache.close();
  }

  /** A block stored in the lower tier only, as one RAM evicted long ago. */
  private BlockKey inLowerOnly() {
    BlockKey key = Payloads.key(nextKey++);
    assertThat(lower.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
    return key;
  }

  /** Reads blocks from the lower tier through the cache's leases, as the server does. */
  private void readThroughLeases(int blocks) {
    for (int i = 0; i < blocks; i++) {
      try (BlockLease lease = cache.get(inLowerOnly())) {
        assertThat(lease.status()).isEqualTo(GetStatus.HIT);
      }
    }
  }

  private long estimatedMillis(List<BlockKey> keys, String tier) {
    PrefixLocation location = cache.locatePrefix(keys);
    return location.runs().stream().filter(r -> r.tier().equals(tier)).findFirst().orElseThrow()
        .estimatedLoad().orElseThrow().toMillis();
  }

  @Test
  void saysWhichTierHoldsEachRunOfTheLeadingBlocks() {
    BlockKey a = Payloads.key(1000);
    BlockKey b = Payloads.key(1001);
    cache.put(a, Payloads.of(a, 1, BLOCK));
    cache.put(b, Payloads.of(b, 1, BLOCK));
    List<BlockKey> keys = List.of(a, b, inLowerOnly(), inLowerOnly(), inLowerOnly(), Payloads.key(2000));

    PrefixLocation location = cache.locatePrefix(keys);

    assertThat(location.runs()).extracting(Run::tier, Run::blocks)
        .containsExactly(tuple("ram", 2), tuple("slow", 3));
    assertThat(location.blocks()).isEqualTo(cache.lookupPrefix(keys)).isEqualTo(5);
    assertThat(location.runs().get(0).estimatedLoad()).as("RAM timed its puts").isPresent();
    assertThat(location.estimatedLoad()).as("the slow tier has not read anything yet").isEmpty();
    assertThat(cache.locatePrefix(List.of(Payloads.key(2000)))).isEqualTo(PrefixLocation.NONE);
  }

  @Test
  void estimateTracksADeliberatelySlowedTier() {
    List<BlockKey> prefix = List.of(inLowerOnly(), inLowerOnly(), inLowerOnly(), inLowerOnly());

    lower.delayMillis = 2;
    readThroughLeases(40);
    long at2ms = estimatedMillis(prefix, "slow");
    assertThat(at2ms).as("4 blocks at 2 ms each").isBetween(8L, 16L);

    lower.delayMillis = 20;
    readThroughLeases(40);
    long at20ms = estimatedMillis(prefix, "slow");
    assertThat(at20ms).as("4 blocks at 20 ms each").isBetween(75L, 110L);

    lower.delayMillis = 0;
    readThroughLeases(60);
    assertThat(estimatedMillis(prefix, "slow")).as("fast again").isLessThan(at2ms);

    BlockKey inRam = Payloads.key(5000);
    cache.put(inRam, Payloads.of(inRam, 1, BLOCK));
    assertThat(cache.locatePrefix(List.of(inRam)).estimatedLoad().orElseThrow())
        .as("a RAM block, against a block of the slowed tier")
        .isLessThan(Duration.ofMillis(2));
  }

  @Test
  void copyingReadsOfTheLowerTierCountToo() {
    List<BlockKey> prefix = List.of(inLowerOnly(), inLowerOnly());
    lower.delayMillis = 5;
    for (int i = 0; i < 30; i++) {
      BlockKey key = inLowerOnly();
      ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
      assertThat(cache.getInto(key, dst)).isEqualTo(GetStatus.HIT);
    }
    assertThat(estimatedMillis(prefix, "slow")).as("2 blocks at 5 ms each").isBetween(10L, 20L);
  }

  /** A tier that takes {@link #delayMillis} more for each block it reads, and times its copies. */
  private static final class SlowTier implements Tier {
    private final RamTier inner;
    private final LoadRate rate = new LoadRate();
    volatile long delayMillis;

    SlowTier(RamTier inner) {
      this.inner = inner;
    }

    private void pause() {
      long until = System.nanoTime() + delayMillis * 1_000_000;
      while (System.nanoTime() < until) {
        LockSupport.parkNanos(until - System.nanoTime());
      }
    }

    @Override
    public LoadRate loadRate() {
      return rate;
    }

    @Override
    public BlockLease get(BlockKey key) {
      pause();
      return inner.get(key);
    }

    @Override
    public GetStatus getInto(BlockKey key, ByteBuffer dst) {
      long start = System.nanoTime();
      int position = dst.position();
      pause();
      GetStatus status = inner.getInto(key, dst);
      if (status == GetStatus.HIT) {
        rate.record(dst.position() - position, System.nanoTime() - start);
      }
      return status;
    }

    @Override
    public PutStatus put(BlockKey key, ByteBuffer src) {
      return inner.put(key, src);
    }

    @Override
    public boolean contains(BlockKey key) {
      return inner.contains(key);
    }

    @Override
    public boolean delete(BlockKey key) {
      return inner.delete(key);
    }

    @Override
    public CacheStats stats() {
      return inner.stats();
    }

    @Override
    public String name() {
      return "slow";
    }

    @Override
    public long capacityBytes() {
      return inner.capacityBytes();
    }

    @Override
    public int maxBlockBytes() {
      return inner.maxBlockBytes();
    }

    @Override
    public void close() {
      inner.close();
    }
  }
}
