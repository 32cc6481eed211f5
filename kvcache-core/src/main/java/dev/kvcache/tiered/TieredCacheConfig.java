package dev.kvcache.tiered;

import java.time.Duration;
import java.util.Objects;

/**
 * How a {@link TieredCache} moves blocks between its tiers.
 *
 * @param spillQueueBlocks blocks evicted from RAM that may wait for the lower tier at once (default
 *     {@value #DEFAULT_SPILL_QUEUE_BLOCKS}); each keeps its RAM memory pinned until written, so
 *     waiting blocks are also held to a quarter of the RAM budget
 * @param spillQueueWait how long a put may wait for the spill thread (default {@link
 *     #DEFAULT_SPILL_QUEUE_WAIT}): when it finds the queue more than half full, and when RAM's free
 *     memory is pinned by blocks waiting to be spilled. Blocks RAM evicts while the queue is still
 *     full are dropped and counted in {@link TieredStats#spillDrops()}; eviction runs inside RAM's
 *     put and never waits itself. Zero never waits: puts keep RAM speed and the blocks that do not
 *     fit in the queue are lost.
 * @param promoteOnLowerHit whether a read served by the lower tier also copies the block into RAM
 *     (default true)
 * @param spillOnClose whether {@link TieredCache#close()} first writes the blocks RAM holds to the
 *     lower tier, hottest first, so that a lower tier that persists (the disk tier) serves them
 *     after a restart (default true). Closing then takes as long as writing RAM's contents; blocks
 *     the lower tier already holds unchanged are not written again.
 * @param durability what a put's answer promises about the lower tier (default {@link
 *     Durability#RAM_FIRST})
 */
public record TieredCacheConfig(
    int spillQueueBlocks, Duration spillQueueWait, boolean promoteOnLowerHit, boolean spillOnClose,
    Durability durability) {

  public static final int DEFAULT_SPILL_QUEUE_BLOCKS = 64;
  public static final Duration DEFAULT_SPILL_QUEUE_WAIT = Duration.ofMillis(200);

  /** The defaults. */
  public static TieredCacheConfig defaults() {
    return new TieredCacheConfig(DEFAULT_SPILL_QUEUE_BLOCKS, DEFAULT_SPILL_QUEUE_WAIT, true, true,
        Durability.RAM_FIRST);
  }

  /** These settings with {@code durability}. */
  public TieredCacheConfig withDurability(Durability durability) {
    return new TieredCacheConfig(spillQueueBlocks, spillQueueWait, promoteOnLowerHit, spillOnClose,
        durability);
  }

  /**
   * @throws IllegalArgumentException if {@code spillQueueBlocks} is not positive or {@code
   *     spillQueueWait} is negative
   */
  public TieredCacheConfig {
    if (spillQueueBlocks < 1) {
      throw new IllegalArgumentException("spillQueueBlocks must be positive, got " + spillQueueBlocks);
    }
    Objects.requireNonNull(spillQueueWait, "spillQueueWait");
    if (spillQueueWait.isNegative()) {
      throw new IllegalArgumentException("spillQueueWait must not be negative, got " + spillQueueWait);
    }
    Objects.requireNonNull(durability, "durability");
  }
}
