package dev.kvcache.tiered;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockWriter;
import dev.kvcache.ram.RamTier;

/**
 * Room in RAM for the puts of a {@link TieredCache} while the blocks RAM evicts wait in the spill
 * queue, their memory pinned until written: a put first waits for the spill threads while the
 * queue is more than half full ({@link #awaitSpillRoom}), and a writer that finds no room only
 * because of the queue waits for it to drain before evicting further ({@link #open}). RAM's
 * eviction listener asks {@link #pastWait} whether the evicting put has waited as long as it may.
 */
final class RoomInRam {

  /** The spill queue pins at most this fraction (1/n) of RAM. */
  static final int SPILL_QUEUE_RAM_SHARE = 4;
  private static final int MAX_RAM_PUT_RETRIES = 8;

  private final TieredCacheConfig config;
  private final long maxQueuedBytes;
  /**
   * Set on a put's thread once it has waited for the spill threads as long as it may: from then on
   * the blocks it evicts past the queue's byte bound are dropped.
   */
  private final ThreadLocal<Boolean> pastSpillWait = ThreadLocal.withInitial(() -> false);
  private final RamTier ram;
  private final SpillQueue spills;

  /** @param maxQueuedBytes the most RAM bytes the spill queue may keep pinned */
  RoomInRam(RamTier ram, SpillQueue spills, TieredCacheConfig config, long maxQueuedBytes) {
    this.ram = ram;
    this.spills = spills;
    this.config = config;
    this.maxQueuedBytes = maxQueuedBytes;
  }

  /** Whether the put evicting on this thread has waited for the spill threads as long as it may. */
  boolean pastWait() {
    return pastSpillWait.get() || config.spillQueueWait().isZero();
  }

  /**
   * Waits, up to the configured time, until the spill queue is at most half full, in blocks and in
   * bytes counting {@code bytes} more: the other half takes what this put evicts (usually about
   * its own size; more when RAM's free memory is fragmented) without dropping it.
   */
  void awaitSpillRoom(int bytes) {
    if (spills.hasRoom(bytes) || config.spillQueueWait().isZero()) {
      return;
    }
    long deadline = System.nanoTime() + config.spillQueueWait().toNanos();
    while (!spills.hasRoom(bytes) && spills.awaitProgress(deadline)) {
      // each spill that ends may have made room
    }
  }

  /**
   * RAM's writer, reopened while it found no room only because the blocks it evicted went to the
   * spill queue, which keeps their memory pinned until written. Until then its victims join the
   * queue even past the queue's byte bound: evicting frees nothing at once, so dropping them would
   * lose blocks for no room. It waits for the spill threads to write some (up to {@link
   * TieredCacheConfig#spillQueueWait()}); after that it evicts further, and victims past the byte
   * bound are dropped and free their memory. What then still finds no room is pinned by leases.
   */
  BlockWriter open(BlockKey key, int length) {
    long deadline = System.nanoTime() + config.spillQueueWait().toNanos();
    BlockWriter writer = ram.writer(key, length);
    while (writer.rejection().isPresent() && spills.bytes() > 0
        && spills.awaitProgress(deadline)) {
      writer = ram.writer(key, length);
    }
    if (writer.rejection().isEmpty()) {
      return writer;
    }
    pastSpillWait.set(true);
    try {
      long queuedBefore = 0;
      for (int retry = 0; retry < MAX_RAM_PUT_RETRIES && writer.rejection().isPresent()
          && queuedBefore < maxQueuedBytes; retry++) {
        queuedBefore = spills.bytes();
        writer = ram.writer(key, length);
      }
    } finally {
      pastSpillWait.set(false);
    }
    return writer;
  }
}
