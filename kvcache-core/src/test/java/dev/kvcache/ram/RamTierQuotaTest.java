package dev.kvcache.ram;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.Namespace;
import dev.kvcache.PutStatus;
import dev.kvcache.spi.TierVisitor;
import dev.kvcache.testkit.LeakCheck;
import dev.kvcache.testkit.Payloads;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Quotas in RAM: a namespace at its quota makes room from its own coldest blocks and never from
 * another's, whatever it puts; the namespaces without a quota share what the quotas' blocks
 * leave, and give it back when a namespace below its quota needs it.
 */
class RamTierQuotaTest {

  @RegisterExtension static final LeakCheck LEAKS = new LeakCheck();

  private static final int MIB = 1 << 20;
  private static final int BLOCK = 60 * 1024; // 15 granules of 4 KiB
  private static final Namespace FLOOD = Namespace.of("m", "bf16", "v1", "flood");
  private static final Namespace KEPT = Namespace.of("m", "bf16", "v1", "kept");
  private static final Namespace SHARED = Namespace.of("m", "bf16", "v1", "shared");

  private static RamTier tier(RamPolicy policy, long capacity, Map<Namespace, Long> quotas) {
    return LEAKS.track(new RamTier(RamTierConfig.ofCapacity(capacity).withMaxBlockBytes(MIB)
        .withPolicy(policy).withQuotas(quotas)));
  }

  private static BlockKey key(Namespace ns, int n) {
    return BlockKey.ofRaw(ns, ByteBuffer.allocate(16).putInt(12, n).array());
  }

  private static List<BlockKey> put(RamTier tier, Namespace ns, int from, int count) {
    List<BlockKey> keys = new ArrayList<>();
    for (int i = from; i < from + count; i++) {
      BlockKey key = key(ns, i);
      assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isIn(PutStatus.STORED,
          PutStatus.NOT_ADMITTED);
      keys.add(key);
    }
    return keys;
  }

  private static boolean holds(RamTier tier, BlockKey key) {
    try (BlockLease lease = tier.get(key)) {
      if (lease.status() != GetStatus.HIT) {
        return false;
      }
      assertThat(Payloads.verify(key, lease.bytes())).isEqualTo(1);
      return true;
    }
  }

  @ParameterizedTest
  @EnumSource(RamPolicy.class)
  void aFloodAtTenTimesItsQuotaEvictsOnlyItsOwnBlocks(RamPolicy policy) {
    RamTier tier = tier(policy, 8 * MIB, Map.of(FLOOD, (long) MIB, KEPT, 2L * MIB));
    List<BlockKey> kept = put(tier, KEPT, 0, 30); // 1.8 MiB, within its quota
    List<BlockKey> shared = put(tier, SHARED, 0, 40); // 2.4 MiB, within what the quotas leave

    put(tier, FLOOD, 0, 10 * MIB / BLOCK * 10); // ten times its quota, ten times over

    assertThat(kept).allMatch(k -> holds(tier, k));
    assertThat(shared).allMatch(k -> holds(tier, k));
    assertThat(tier.usedBytesOf(FLOOD)).isPositive().isLessThanOrEqualTo(MIB);
    assertThat(tier.usedBytesOf(KEPT)).isEqualTo(30L * BLOCK);
    assertThat(tier.usedBytesOf(SHARED)).as("the others, together").isEqualTo(40L * BLOCK)
        .isEqualTo(tier.usedBytesOf(null));
  }

  @Test
  void aNamespaceAtItsQuotaEvictsItsOwnLeastRecentlyUsedFirst() {
    RamTier tier = tier(RamPolicy.LRU, 8 * MIB, Map.of(KEPT, 10L * BLOCK));
    List<BlockKey> first = put(tier, KEPT, 0, 10);
    assertThat(holds(tier, first.get(0))).isTrue(); // used again: the second is the coldest now
    put(tier, KEPT, 10, 1);
    assertThat(holds(tier, first.get(0))).isTrue();
    assertThat(holds(tier, first.get(1))).isFalse();
    assertThat(tier.usedBytesOf(KEPT)).isEqualTo(10L * BLOCK);
  }

  @ParameterizedTest
  @EnumSource(RamPolicy.class)
  void theOthersShareWhatTheQuotasLeaveAndNeverTakeAQuotasRoom(RamPolicy policy) {
    RamTier tier = tier(policy, 4 * MIB, Map.of(KEPT, 2L * MIB));
    List<BlockKey> kept = put(tier, KEPT, 0, 34); // 2.0 MiB: its whole quota
    BlockKey unnamed = BlockKey.of(7, 7); // a key that names no namespace counts with the others
    assertThat(tier.put(unnamed, Payloads.of(unnamed, 1, BLOCK))).isEqualTo(PutStatus.STORED);
    assertThat(tier.usedBytesOf(SHARED)).isEqualTo(BLOCK);
    Namespace second = Namespace.of("m", "bf16", "v1", "second");
    put(tier, SHARED, 0, 100);
    put(tier, second, 0, 100);

    assertThat(kept).allMatch(k -> holds(tier, k));
    assertThat(tier.usedBytesOf(SHARED)).isEqualTo(tier.usedBytesOf(second))
        .isLessThanOrEqualTo(2L * MIB).isGreaterThan(MIB);
  }

  @ParameterizedTest
  @EnumSource(RamPolicy.class)
  void theOthersBorrowAQuotasUnusedRoomUntilItsNamespaceTakesItBack(RamPolicy policy) {
    RamTier tier = tier(policy, 4 * MIB, Map.of(KEPT, 2L * MIB));
    put(tier, SHARED, 0, 100);
    assertThat(tier.usedBytesOf(SHARED)).as("more than the quota leaves, while it is unused")
        .isGreaterThan(3L * MIB);

    List<BlockKey> kept = put(tier, KEPT, 0, 34); // its whole quota, taken back
    assertThat(kept).allMatch(k -> holds(tier, k));
    assertThat(tier.usedBytesOf(KEPT)).isEqualTo(34L * BLOCK);
    assertThat(tier.usedBytesOf(SHARED)).isLessThanOrEqualTo(2L * MIB);

    put(tier, SHARED, 100, 100); // the others' flood now evicts their own blocks only
    assertThat(kept).allMatch(k -> holds(tier, k));
  }

  @Test
  void aKeyRebuiltFromItsBytesFindsItsBlockInItsNamespacesQuota() {
    RamTier tier = tier(RamPolicy.LRU, 4 * MIB, Map.of(KEPT, (long) MIB));
    BlockKey named = key(KEPT, 1);
    put(tier, KEPT, 1, 1);
    BlockKey rebuilt = BlockKey.of(named.hi(), named.lo());
    assertThat(holds(tier, rebuilt)).isTrue();
    assertThat(tier.delete(rebuilt)).isTrue();
    assertThat(holds(tier, named)).isFalse();
    assertThat(tier.usedBytesOf(KEPT)).isZero();
  }

  @Test
  void eachQuotaIsReportedWithItsUseAndTheOthersTogether() {
    RamTier tier = tier(RamPolicy.LRU, 8 * MIB, Map.of(KEPT, 2L * MIB));
    put(tier, KEPT, 0, 3);
    put(tier, SHARED, 0, 2);
    put(tier, FLOOD, 0, 1);
    Map<String, Double> gauges = new TreeMap<>();
    tier.describe(new TierVisitor() {
      @Override
      public void hits(String t, LongSupplier reads) {}

      @Override
      public void bytes(String t, LongSupplier used, LongSupplier capacity) {}

      @Override
      public void counter(String name, String help, DoubleSupplier value, String... tags) {}

      @Override
      public void gauge(String name, String help, DoubleSupplier value, String... tags) {
        gauges.put(name + String.join(",", tags), value.getAsDouble());
      }
    }, () -> 0);
    assertThat(gauges).containsExactly(
        Map.entry("kvcache.quota.bytestier,ram,namespace,kept", 2.0 * MIB),
        Map.entry("kvcache.quota.used.bytestier,ram,namespace,*", 3.0 * BLOCK),
        Map.entry("kvcache.quota.used.bytestier,ram,namespace,kept", 3.0 * BLOCK));
  }

  @Test
  void quotasThatLeaveNothingForTheOthersAreRefused() {
    RamTierConfig config = RamTierConfig.ofCapacity(4 * MIB);
    assertThatThrownBy(() -> config.withQuotas(Map.of(KEPT, 2L * MIB, FLOOD, 2L * MIB)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("must leave some of the RAM tier's capacity");
    assertThatThrownBy(() -> config.withQuotas(Map.of(KEPT, 100L)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 4096");
    // within the capacity, but not within what the tier lets blocks fill (a largest block spare)
    RamTierConfig tight = RamTierConfig.ofCapacity(4 * MIB).withMaxBlockBytes(MIB)
        .withQuotas(Map.of(KEPT, 4L * MIB - 4096));
    assertThatThrownBy(() -> new RamTier(tight)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("leave nothing");
  }
}
