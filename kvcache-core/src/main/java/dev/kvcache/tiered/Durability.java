package dev.kvcache.tiered;

/**
 * What a {@link TieredCache}'s answer to a put promises about the lower tier, and so what a crash
 * of the process ({@code kill -9}) can lose. Each mode is named by its promise; {@code
 * docs/tiered-cache.md} has the table with the measured cost of each.
 *
 * <p>Blocks already in the lower tier unchanged are not written again when RAM evicts them. A block
 * larger than RAM's largest, or put while RAM is pinned full, goes straight to the lower tier in
 * every mode, and its put returns once the lower tier has it.
 */
public enum Durability {

  /**
   * Puts land in RAM; a block reaches the lower tier when RAM evicts it, or when the cache closes
   * ({@link TieredCacheConfig#spillOnClose()}). A crash loses every block RAM holds and the spill
   * queue's. The fastest: a put costs one copy into RAM, and blocks that are evicted before they
   * are read again are the only ones written to the lower tier.
   */
  RAM_FIRST,

  /**
   * Every put is also queued to the lower tier, written by the spill threads in the background; the
   * put's answer does not wait for it, but a put that leaves more than {@link
   * TieredCacheConfig#spillQueueBlocks()} blocks waiting (or more than the queue's share of RAM,
   * a quarter, in bytes) waits until the spill threads have written enough. So a crash loses at most
   * that many of the latest puts. A write the lower tier refuses or fails is counted ({@link
   * TieredStats#writeFailures()}) and makes {@link TieredCache#health()} degraded; the block stays
   * in RAM and is written again when RAM evicts it.
   */
  WRITE_BEHIND,

  /**
   * A put's answer waits until the lower tier has stored the block, under its own promise (the
   * disk tier's {@code SyncPolicy}: with {@code ALWAYS}, on the device). A crash loses nothing
   * acknowledged. A block the lower tier refuses or fails to write is taken out of RAM again, and
   * the put answers the lower tier's status (a full disk: {@code REJECTED_NO_SPACE}); the failure
   * is counted and makes the cache's health degraded until a write succeeds. The put costs the
   * lower tier's write on the caller's thread, so {@link TieredCache#tryWriter} offers no writer.
   */
  WRITE_THROUGH
}
