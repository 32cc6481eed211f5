package dev.kvcache.tiered;

/**
 * How a {@link TieredCache} moves blocks between its tiers.
 *
 * @param spillQueueBlocks blocks evicted from RAM that may wait for the lower tier at once (default
 *     {@value #DEFAULT_SPILL_QUEUE_BLOCKS}); each keeps its RAM memory pinned until written, so
 *     the queue is bounded in RAM bytes by the RAM budget. When it is full, an evicted block is
 *     dropped and counted in {@link TieredStats#spillDrops()}: eviction runs on the thread of the
 *     put that caused it, which never waits for the disk.
 * @param promoteOnLowerHit whether a read served by the lower tier also copies the block into RAM
 *     (default true)
 */
public record TieredCacheConfig(int spillQueueBlocks, boolean promoteOnLowerHit) {

  public static final int DEFAULT_SPILL_QUEUE_BLOCKS = 64;

  /** The defaults. */
  public static TieredCacheConfig defaults() {
    return new TieredCacheConfig(DEFAULT_SPILL_QUEUE_BLOCKS, true);
  }

  /**
   * @throws IllegalArgumentException if {@code spillQueueBlocks} is not positive
   */
  public TieredCacheConfig {
    if (spillQueueBlocks < 1) {
      throw new IllegalArgumentException("spillQueueBlocks must be positive, got " + spillQueueBlocks);
    }
  }
}
