package dev.kvcache.tiered;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.PrefixLocation;
import dev.kvcache.PrefixLocation.Run;
import dev.kvcache.PutStatus;
import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.testkit.Payloads;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A lookup's load-time estimate follows the tier that holds the blocks, here one slowed on purpose. */
class LoadEstimateTest {

  private static final int BLOCK = 64 << 10;

  private GatedTier lower;
  private TieredCache cache;
  private int nextKey;

  @BeforeEach
  void open() {
    lower = new GatedTier(
        new RamTier(RamTierConfig.ofCapacity(64L << 20).withMaxBlockBytes(1 << 20)));
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
        .containsExactly(tuple("ram", 2), tuple("gated", 3));
    assertThat(location.blocks()).isEqualTo(cache.lookupPrefix(keys)).isEqualTo(5);
    assertThat(location.runs().get(0).estimatedLoad()).as("RAM timed its puts").isPresent();
    assertThat(location.estimatedLoad()).as("the slowed tier has not read anything yet").isEmpty();
    assertThat(cache.locatePrefix(List.of(Payloads.key(2000)))).isEqualTo(PrefixLocation.NONE);
  }

  @Test
  void aBlockRamHoldsCountsAsRamsEvenWhenTheLowerTierHoldsItToo() {
    BlockKey a = inLowerOnly();
    BlockKey b = Payloads.key(1100);
    BlockKey c = inLowerOnly();
    BlockKey d = Payloads.key(1101);
    cache.put(b, Payloads.of(b, 1, BLOCK));
    cache.put(d, Payloads.of(d, 1, BLOCK));
    assertThat(lower.put(b, Payloads.of(b, 1, BLOCK))).isEqualTo(PutStatus.STORED);
    List<BlockKey> keys = List.of(a, b, c, d, Payloads.key(2001));

    assertThat(cache.locatePrefix(keys).runs()).extracting(Run::tier, Run::blocks)
        .containsExactly(tuple("gated", 1), tuple("ram", 1), tuple("gated", 1), tuple("ram", 1));
  }

  @Test
  void estimateTracksADeliberatelySlowedTier() {
    List<BlockKey> prefix = List.of(inLowerOnly(), inLowerOnly(), inLowerOnly(), inLowerOnly());

    lower.readDelayMillis = 2;
    readThroughLeases(40);
    long at2ms = estimatedMillis(prefix, "gated");
    assertThat(at2ms).as("4 blocks at 2 ms each").isBetween(8L, 16L);

    lower.readDelayMillis = 20;
    readThroughLeases(40);
    long at20ms = estimatedMillis(prefix, "gated");
    assertThat(at20ms).as("4 blocks at 20 ms each").isBetween(75L, 110L);

    lower.readDelayMillis = 0;
    readThroughLeases(60);
    assertThat(estimatedMillis(prefix, "gated")).as("fast again").isLessThan(at2ms);

    BlockKey inRam = Payloads.key(5000);
    cache.put(inRam, Payloads.of(inRam, 1, BLOCK));
    assertThat(cache.locatePrefix(List.of(inRam)).estimatedLoad().orElseThrow())
        .as("a RAM block, against a block of the slowed tier")
        .isLessThan(Duration.ofMillis(2));
  }

  @Test
  void copyingReadsOfTheLowerTierCountToo() {
    List<BlockKey> prefix = List.of(inLowerOnly(), inLowerOnly());
    lower.readDelayMillis = 5;
    for (int i = 0; i < 30; i++) {
      BlockKey key = inLowerOnly();
      ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
      assertThat(cache.getInto(key, dst)).isEqualTo(GetStatus.HIT);
    }
    assertThat(estimatedMillis(prefix, "gated")).as("2 blocks at 5 ms each").isBetween(10L, 20L);
  }
}
