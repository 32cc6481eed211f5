package dev.kvcache.tiered;

import dev.kvcache.spi.TierSettings;
import java.time.Duration;
import java.util.Objects;

/**
 * How a {@link TieredCache} moves blocks between its tiers.
 *
 * @param spillQueueBlocks blocks evicted from RAM that may wait for the lower tier at once (default
 *     {@value #DEFAULT_SPILL_QUEUE_BLOCKS}); each keeps its RAM memory pinned until written, so
 *     waiting blocks are also held to a quarter of the RAM budget
 * @param spillQueueWait how long a put may wait for the spill threads (default {@link
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
 * @param spillThreads threads that write queued blocks to the lower tier, each taking the oldest
 *     block waiting (default {@value #DEFAULT_SPILL_THREADS}): a write into the page cache is a
 *     copy that keeps a core busy, so one thread alone writes slower than a fast disk takes
 */
public record TieredCacheConfig(
    int spillQueueBlocks, Duration spillQueueWait, boolean promoteOnLowerHit, boolean spillOnClose,
    Durability durability, int spillThreads) {

  public static final int DEFAULT_SPILL_QUEUE_BLOCKS = 64;
  public static final Duration DEFAULT_SPILL_QUEUE_WAIT = Duration.ofMillis(200);
  public static final int DEFAULT_SPILL_THREADS = 2;
  /** The most spill threads a cache may have. */
  public static final int MAX_SPILL_THREADS = 64;

  /** The defaults. */
  public static TieredCacheConfig defaults() {
    return new TieredCacheConfig(DEFAULT_SPILL_QUEUE_BLOCKS, DEFAULT_SPILL_QUEUE_WAIT, true, true,
        Durability.RAM_FIRST, DEFAULT_SPILL_THREADS);
  }

  /**
   * Reads the settings {@code spill-queue-blocks}, {@code spill-queue-wait}, {@code
   * promote-on-lower-hit}, {@code spill-on-close}, {@code durability} ({@code ram_first}, {@code
   * write_behind} or {@code write_through}) and {@code spill-threads}; an absent one takes its
   * default.
   *
   * @throws IllegalArgumentException naming the setting that is malformed or out of range
   */
  public static TieredCacheConfig read(TierSettings settings) {
    TieredCacheConfig d = defaults();
    return new TieredCacheConfig(
        settings.integer("spill-queue-blocks", d.spillQueueBlocks(), 1, Integer.MAX_VALUE),
        settings.duration("spill-queue-wait", d.spillQueueWait()),
        settings.bool("promote-on-lower-hit", d.promoteOnLowerHit()),
        settings.bool("spill-on-close", d.spillOnClose()),
        settings.choice("durability", Durability.class, d.durability()),
        settings.integer("spill-threads", d.spillThreads(), 1, MAX_SPILL_THREADS));
  }

  /** These settings with the default number of spill threads. */
  public TieredCacheConfig(int spillQueueBlocks, Duration spillQueueWait,
      boolean promoteOnLowerHit, boolean spillOnClose, Durability durability) {
    this(spillQueueBlocks, spillQueueWait, promoteOnLowerHit, spillOnClose, durability,
        DEFAULT_SPILL_THREADS);
  }

  /** These settings with {@code spillQueueBlocks}. */
  public TieredCacheConfig withSpillQueueBlocks(int spillQueueBlocks) {
    return new TieredCacheConfig(spillQueueBlocks, spillQueueWait, promoteOnLowerHit, spillOnClose,
        durability, spillThreads);
  }

  /** These settings with {@code spillQueueWait}. */
  public TieredCacheConfig withSpillQueueWait(Duration spillQueueWait) {
    return new TieredCacheConfig(spillQueueBlocks, spillQueueWait, promoteOnLowerHit, spillOnClose,
        durability, spillThreads);
  }

  /** These settings with {@code promoteOnLowerHit}. */
  public TieredCacheConfig withPromoteOnLowerHit(boolean promoteOnLowerHit) {
    return new TieredCacheConfig(spillQueueBlocks, spillQueueWait, promoteOnLowerHit, spillOnClose,
        durability, spillThreads);
  }

  /** These settings with {@code spillOnClose}. */
  public TieredCacheConfig withSpillOnClose(boolean spillOnClose) {
    return new TieredCacheConfig(spillQueueBlocks, spillQueueWait, promoteOnLowerHit, spillOnClose,
        durability, spillThreads);
  }

  /** These settings with {@code durability}. */
  public TieredCacheConfig withDurability(Durability durability) {
    return new TieredCacheConfig(spillQueueBlocks, spillQueueWait, promoteOnLowerHit, spillOnClose,
        durability, spillThreads);
  }

  /** These settings with {@code spillThreads}. */
  public TieredCacheConfig withSpillThreads(int spillThreads) {
    return new TieredCacheConfig(spillQueueBlocks, spillQueueWait, promoteOnLowerHit, spillOnClose,
        durability, spillThreads);
  }

  /**
   * @throws IllegalArgumentException if {@code spillQueueBlocks} is not positive, {@code
   *     spillQueueWait} is negative, or {@code spillThreads} is not between 1 and {@value
   *     #MAX_SPILL_THREADS}
   */
  public TieredCacheConfig {
    if (spillQueueBlocks < 1) {
      throw new IllegalArgumentException("spillQueueBlocks must be positive, got " + spillQueueBlocks);
    }
    if (spillThreads < 1 || spillThreads > MAX_SPILL_THREADS) {
      throw new IllegalArgumentException("spillThreads must be between 1 and " + MAX_SPILL_THREADS
          + ", got " + spillThreads);
    }
    Objects.requireNonNull(spillQueueWait, "spillQueueWait");
    if (spillQueueWait.isNegative()) {
      throw new IllegalArgumentException("spillQueueWait must not be negative, got " + spillQueueWait);
    }
    Objects.requireNonNull(durability, "durability");
  }
}
