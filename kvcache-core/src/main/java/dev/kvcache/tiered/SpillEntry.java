package dev.kvcache.tiered;

import dev.kvcache.BlockLease;
import dev.kvcache.PutStatus;
import dev.kvcache.spi.Tier;
import java.nio.ByteBuffer;
import java.util.OptionalInt;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A block on its way to the lower tier: evicted from RAM, or a copy of a block RAM still holds,
 * written behind or through the put that stored it ({@link Durability}). It holds the RAM tier's
 * lease on its bytes, shared by the writer (a spill thread, or a write-through put's own thread)
 * and any reader that finds it meanwhile. The lease is closed when the last of them lets go. A
 * {@link StackedTier} holds the blocks its upper tier evicted the same way until they are uploaded.
 *
 * <p>A put or delete of the key cancels it. Cancelling a block no writer has claimed means it is
 * never written; cancelling one being written waits until the write is over, so that the
 * canceller's own write or delete in the lower tier lands after it.
 */
final class SpillEntry {

  private static final int QUEUED = 0;
  private static final int WRITING = 1;
  private static final int CANCELLED = 2;

  private final BlockLease lease;
  private final int size;
  /** Its place among the blocks registered with the queue, and the bytes registered before it. */
  private long sequence = -1;
  private long bytesBefore;
  /** Whether RAM still holds the block (a copy written behind or through), not evicted it. */
  private final boolean copy;
  /** What the lower tier answered; null until written, and if the write threw. */
  private volatile PutStatus outcome;
  /** Holders: the writer's one, plus readers; 0 once the lease is closed. */
  private final AtomicInteger holders = new AtomicInteger(1);
  private final AtomicInteger state = new AtomicInteger(QUEUED);
  private final CountDownLatch written = new CountDownLatch(1);

  private SpillEntry(BlockLease lease, boolean copy) {
    this.lease = lease;
    this.size = lease.bytes().remaining();
    this.copy = copy;
  }

  /** A block RAM evicted, under the lease the eviction handed over. */
  static SpillEntry evicted(BlockLease lease) {
    return new SpillEntry(lease, false);
  }

  /** A copy of a block RAM holds, under a lease of its own on RAM's bytes. */
  static SpillEntry copyOf(BlockLease lease) {
    return new SpillEntry(lease, true);
  }

  boolean isCopy() {
    return copy;
  }

  BlockLease lease() {
    return lease;
  }

  ByteBuffer bytes() {
    return lease.bytes();
  }

  int size() {
    return size;
  }

  /**
   * Puts a leased block's bytes in {@code lower}, checked against the CRC32C its lease says they
   * were stored with ({@link Tier#putChecked}) if it gives one: bytes damaged in RAM are never
   * stored below under a checksum of the lower tier's own, as if intact.
   *
   * @throws ChecksumMismatchException if the bytes no longer have their checksum
   */
  static PutStatus putDown(Tier lower, BlockLease lease, ByteBuffer bytes) {
    OptionalInt stored = lease.crc32c();
    return stored.isPresent() ? lower.putChecked(lease.key(), bytes, stored.getAsInt())
        : lower.put(lease.key(), bytes);
  }

  /** Records the entry's place in the queue's order, once, when it is registered. */
  void place(long sequence, long bytesBefore) {
    this.sequence = sequence;
    this.bytesBefore = bytesBefore;
  }

  /** Its place among the blocks registered with the queue, from 0. */
  long sequence() {
    return sequence;
  }

  /** The bytes of the blocks registered before it. */
  long bytesBefore() {
    return bytesBefore;
  }

  /** Claims the block for writing; false if a put or delete cancelled it first. */
  boolean startWriting() {
    return state.compareAndSet(QUEUED, WRITING);
  }

  /** The writer is done with the block: the lower tier answered {@code outcome}, or null if it threw. */
  void finishWriting(PutStatus outcome) {
    this.outcome = outcome;
    written.countDown();
  }

  /**
   * Waits until the block is written, if a writer claimed it.
   *
   * @return what the lower tier answered; null if the write threw, or if the block was cancelled
   *     before a writer claimed it
   */
  PutStatus awaitOutcome() {
    if (state.get() == CANCELLED) {
      return null;
    }
    awaitWritten();
    return outcome;
  }

  /**
   * Stops the block from being written, or waits (uninterruptibly: one write of one block) for a
   * write under way to end.
   */
  void cancel() {
    if (!tryCancel()) {
      awaitWritten();
    }
  }

  /**
   * As {@link #cancel}, without waiting: false, and nothing done, if a write is under way.
   */
  boolean tryCancel() {
    return state.compareAndSet(QUEUED, CANCELLED) || state.get() == CANCELLED
        || written.getCount() == 0;
  }

  /** Whether a put or delete of the key cancelled the block before a writer claimed it. */
  boolean cancelled() {
    return state.get() == CANCELLED;
  }

  private void awaitWritten() {
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
