package dev.kvcache.disk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.Namespace;
import dev.kvcache.PutStatus;
import dev.kvcache.testkit.Payloads;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Disk quotas per namespace ({@link DiskTierConfig.Builder#quota}): a namespace at its quota
 * reclaims its own super-blocks and never another's, the namespaces without one borrow what a
 * quota leaves unused until its namespace takes it back, and a restart keeps each super-block
 * counted against the quota it was written for.
 */
class DiskTierQuotaTest {

  private static final Namespace FLOOD = Namespace.of("m", "bf16", "v1", "flood");
  private static final Namespace KEPT = Namespace.of("m", "bf16", "v1", "kept");
  private static final Namespace OTHER = Namespace.of("m", "bf16", "v1", "other");
  private static final int BLOCK = 32 << 10;
  private static final long SUPER_BLOCK = 256 << 10;
  private static final long CAPACITY = 16 * SUPER_BLOCK;

  @TempDir Path temp;

  private static BlockKey key(Namespace ns, int n) {
    return BlockKey.ofRaw(ns, ByteBuffer.allocate(16).putInt(12, n).array());
  }

  private DiskTierConfig.Builder builder() {
    return DiskTierConfig.builder(temp.resolve("tier"), CAPACITY).superBlockBytes(SUPER_BLOCK)
        .syncPolicy(SyncPolicy.NONE).minFreeBytes(0);
  }

  private static void put(DiskTier tier, Namespace ns, int from, int to) {
    for (int i = from; i < to; i++) {
      BlockKey key = key(ns, i);
      assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).as("put %s %d", ns.tenant(), i)
          .isEqualTo(PutStatus.STORED);
    }
  }

  /** How many of {@code ns}'s blocks {@code from} to {@code to - 1} the tier holds, each exact. */
  private static int held(DiskTier tier, Namespace ns, int from, int to) {
    int held = 0;
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    for (int i = from; i < to; i++) {
      BlockKey key = key(ns, i);
      dst.clear();
      if (tier.getInto(key, dst) == GetStatus.HIT) {
        assertThat(Payloads.verify(key, dst.flip())).as("%s %d", ns.tenant(), i).isEqualTo(1);
        held++;
      }
    }
    return held;
  }

  @Test
  void aNamespaceAtItsQuotaReclaimsItsOwnSuperBlocksNeverAnothers() throws IOException {
    long quota = 4 * SUPER_BLOCK;
    try (DiskTier tier = DiskTier.open(builder().quota(FLOOD, quota).build())) {
      put(tier, KEPT, 0, 40); // about 6 super-blocks, in what the quota leaves
      put(tier, FLOOD, 0, (int) (10 * quota / BLOCK)); // ten times its quota
      assertThat(held(tier, KEPT, 0, 40)).as("blocks of the namespace without a quota")
          .isEqualTo(40);
      assertThat(tier.usedBytesOf(FLOOD)).isLessThanOrEqualTo(quota);
      int flooded = (int) (10 * quota / BLOCK);
      assertThat(held(tier, FLOOD, flooded - 10, flooded)).as("the flood's newest blocks")
          .isEqualTo(10);
      assertThat(held(tier, FLOOD, 0, 10)).as("the flood's oldest blocks").isZero();
    }
  }

  @Test
  void theOthersBorrowWhatAQuotaLeavesUnusedUntilItsNamespaceTakesItBack() throws IOException {
    long quota = 8 * SUPER_BLOCK;
    try (DiskTier tier = DiskTier.open(builder().quota(KEPT, quota).build())) {
      put(tier, OTHER, 0, 300); // about 43 super-blocks through a capacity of 16
      assertThat(tier.usedBytesOf(OTHER)).as("the others borrow the unused quota")
          .isGreaterThan(CAPACITY - quota);
      assertThat(tier.usedBytesOf(null)).isEqualTo(tier.usedBytesOf(OTHER));

      put(tier, KEPT, 0, 40); // about 6 super-blocks, within its quota
      assertThat(held(tier, KEPT, 0, 40)).as("the quota's namespace took its room back")
          .isEqualTo(40);
      assertThat(tier.usedBytesOf(KEPT) + tier.usedBytesOf(OTHER)).isLessThanOrEqualTo(CAPACITY);
      assertThat(held(tier, OTHER, 290, 300)).as("the others' newest blocks").isEqualTo(10);
    }
  }

  @Test
  void aRestartCountsEachSuperBlockAgainstTheQuotaItWasWrittenFor() throws IOException {
    long quota = 4 * SUPER_BLOCK;
    long flooded;
    try (DiskTier tier = DiskTier.open(builder().quota(FLOOD, quota).build())) {
      put(tier, FLOOD, 0, 60);
      put(tier, KEPT, 0, 40);
      flooded = tier.usedBytesOf(FLOOD);
      assertThat(flooded).isPositive();
    }
    try (DiskTier tier = DiskTier.open(builder().quota(FLOOD, quota).build())) {
      assertThat(tier.usedBytesOf(FLOOD)).as("the flood's super-blocks, found again")
          .isPositive().isLessThanOrEqualTo(flooded);
      put(tier, FLOOD, 1000, 1000 + (int) (10 * quota / BLOCK));
      assertThat(held(tier, KEPT, 0, 40)).isEqualTo(40);
      assertThat(tier.usedBytesOf(FLOOD)).isLessThanOrEqualTo(quota);
    }
    try (DiskTier tier = DiskTier.open(builder().build())) {
      assertThat(tier.usedBytesOf(null)).as("without the quota, its super-blocks are shared")
          .isEqualTo(tier.usedBytesOf(FLOOD)).isPositive();
      assertThat(held(tier, KEPT, 0, 40)).isEqualTo(40);
    }
  }

  @Test
  void aFloodWhoseDroppedSuperBlocksReadersStillHoldNeverTakesAnothersRoom() throws IOException {
    long quota = 4 * SUPER_BLOCK;
    List<BlockLease> held = new ArrayList<>();
    try (DiskTier tier = DiskTier.open(builder().quota(FLOOD, quota).build())) {
      put(tier, KEPT, 0, 40);
      for (int i = 0; i < 10 * quota / BLOCK; i++) {
        BlockKey key = key(FLOOD, i);
        if (tier.put(key, Payloads.of(key, 1, BLOCK)) == PutStatus.STORED) {
          held.add(tier.get(key)); // keeps its super-block's file while it is dropped
        }
      }
      assertThat(held(tier, KEPT, 0, 40)).as("the kept namespace's blocks").isEqualTo(40);
    } finally {
      held.forEach(BlockLease::close);
    }
  }

  @Test
  void quotasTooSmallOrLeavingTooLittleAreRefusedNamingWhy() {
    assertThatThrownBy(() -> builder().quota(FLOOD, 3 * SUPER_BLOCK).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("disk quota of").hasMessageContaining("at least 4 super-blocks")
        .hasMessageContaining(String.valueOf(4 * SUPER_BLOCK));
    assertThatThrownBy(() -> builder().quota(FLOOD, 6 * SUPER_BLOCK).quota(KEPT, 7 * SUPER_BLOCK)
        .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("the disk quotas take " + 13 * SUPER_BLOCK)
        .hasMessageContaining("must leave 4 super-blocks");
  }
}
