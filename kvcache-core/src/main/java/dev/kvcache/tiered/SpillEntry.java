package dev.kvcache.tiered;

import dev.kvcache.BlockLease;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A block evicted from RAM on its way to the lower tier: the RAM tier's lease on its bytes, shared
 * by the spill thread and any reader that finds it meanwhile. The lease is closed when the last of
 * them lets go. A put or delete of the key cancels it: a cancelled block is not written, or is
 * deleted again from the lower tier if the write was already under way.
 */
final class SpillEntry {

  private final BlockLease lease;
  /** Holders: the spill queue's one, plus readers; 0 once the lease is closed. */
  private final AtomicInteger holders = new AtomicInteger(1);
  private volatile boolean cancelled;

  SpillEntry(BlockLease lease) {
    this.lease = lease;
  }

  BlockLease lease() {
    return lease;
  }

  ByteBuffer bytes() {
    return lease.bytes();
  }

  boolean isCancelled() {
    return cancelled;
  }

  void cancel() {
    cancelled = true;
  }

  /** Takes a hold for a reader; false if the lease is already closed. */
  boolean tryRetain() {
    for (int h = holders.get(); h > 0; h = holders.get()) {
      if (holders.compareAndSet(h, h + 1)) {
        return true;
      }
    }
    return false;
  }

  /** Lets go of a hold; the last one closes the RAM tier's lease. */
  void release() {
    if (holders.decrementAndGet() == 0) {
      lease.close();
    }
  }
}
