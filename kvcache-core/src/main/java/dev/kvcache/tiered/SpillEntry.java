package dev.kvcache.tiered;

import dev.kvcache.BlockLease;
import java.nio.ByteBuffer;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A block evicted from RAM on its way to the lower tier: the RAM tier's lease on its bytes, shared
 * by the spill thread and any reader that finds it meanwhile. The lease is closed when the last of
 * them lets go.
 *
 * <p>A put or delete of the key cancels it. Cancelling a block the spill thread has not started
 * means it is never written; cancelling one being written waits until the write is over, so that
 * the canceller's own write or delete in the lower tier lands after it.
 */
final class SpillEntry {

  private static final int QUEUED = 0;
  private static final int WRITING = 1;
  private static final int CANCELLED = 2;

  private final BlockLease lease;
  private final int size;
  /** Holders: the spill queue's one, plus readers; 0 once the lease is closed. */
  private final AtomicInteger holders = new AtomicInteger(1);
  private final AtomicInteger state = new AtomicInteger(QUEUED);
  private final CountDownLatch written = new CountDownLatch(1);

  SpillEntry(BlockLease lease) {
    this.lease = lease;
    this.size = lease.bytes().remaining();
  }

  BlockLease lease() {
    return lease;
  }

  ByteBuffer bytes() {
    return lease.bytes();
  }

  /** Bytes of RAM the block keeps pinned while it waits. */
  int size() {
    return size;
  }

  /** The spill thread claims the block for writing; false if it was cancelled first. */
  boolean startWriting() {
    return state.compareAndSet(QUEUED, WRITING);
  }

  /** The spill thread is done with the block (written, refused or failed). */
  void finishWriting() {
    written.countDown();
  }

  /**
   * Stops the block from being written, or waits (uninterruptibly: one write of one block) for a
   * write under way to end.
   */
  void cancel() {
    if (state.compareAndSet(QUEUED, CANCELLED) || state.get() == CANCELLED) {
      return;
    }
    boolean interrupted = false;
    while (true) {
      try {
        written.await();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
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
