package dev.kvcache.tiered;

import dev.kvcache.BlockKey;
import dev.kvcache.PutStatus;
import dev.kvcache.ram.RamTier;
import dev.kvcache.spi.Tier;
import java.util.concurrent.locks.ReentrantLock;

/**
 * What the commit of a put into RAM does about the lower tier: the {@link Durability} mode as a
 * value, one subclass per mode, in place of branches on the mode (as foyer passes {@code
 * WriteOnEviction} or {@code WriteOnInsertion}). {@link TieredCache} commits under the key's
 * stripe lock and asks its policy, in order: whether the put is refused now ({@link #refuses}),
 * whether a copy goes down ({@link #copiesDown}) and where ({@link #enlist}); then, the lock let
 * go, what the put waits for and answers ({@link #settle}).
 */
abstract sealed class PutPolicy {

  final SpillQueue spills;

  private PutPolicy(SpillQueue spills) {
    this.spills = spills;
  }

  static PutPolicy of(Durability durability, RamTier ram, Tier lower, SpillQueue spills,
      CopyCoherence copies) {
    return switch (durability) {
      case RAM_FIRST -> new RamFirst(spills);
      case WRITE_BEHIND -> new WriteBehind(spills);
      case WRITE_THROUGH -> new WriteThrough(spills, ram, lower, copies);
    };
  }

  /** Whether every commit into RAM waits for the lower tier (so none is tried without waiting). */
  boolean commitsWait() {
    return false;
  }

  /**
   * Whether a commit of {@code length} bytes would wait for the spill threads now; false where the
   * mode never makes a commit wait for them.
   */
  boolean backlogMakesWait(int length) {
    return false;
  }

  /** Whether a commit that must not wait takes a place in the spill queue's order first. */
  boolean reservesPlace() {
    return false;
  }

  /** Whether the put is refused before RAM stores it (the writer's room is freed when closed). */
  boolean refuses() {
    return false;
  }

  /** Whether a block RAM stored is copied down to the lower tier behind or through the put. */
  boolean copiesDown() {
    return true;
  }

  /** Whether a put RAM passed straight on to the lower tier counts as stored only once there. */
  boolean storesThrough() {
    return false;
  }

  /**
   * Hands the copy of a block RAM stored to the spill queue, under the key's stripe lock.
   *
   * @param place the place in the queue's order reserved by a commit that must not wait, or null
   */
  abstract void enlist(SpillEntry copy, SpillOrder.Place place);

  /**
   * What the put waits for once its stripe lock is let go, and what it answers.
   *
   * @param copy the copy enlisted, or null if RAM had none to copy (it evicted the block at once)
   * @param evicted the spill of the block RAM passed straight on, if it did and {@link
   *     #storesThrough} or the put was not admitted; else null
   * @param place as in {@link #enlist}
   */
  abstract PutStatus settle(BlockKey key, PutStatus status, SpillEntry copy, SpillEntry evicted,
      SpillOrder.Place place);

  /** {@link Durability#RAM_FIRST}: blocks go down only when RAM evicts them. */
  static final class RamFirst extends PutPolicy {
    RamFirst(SpillQueue spills) {
      super(spills);
    }

    @Override
    boolean copiesDown() {
      return false;
    }

    @Override
    void enlist(SpillEntry copy, SpillOrder.Place place) {
      throw new AssertionError("nothing is copied down behind a put under ram_first");
    }

    @Override
    PutStatus settle(BlockKey key, PutStatus status, SpillEntry copy, SpillEntry evicted,
        SpillOrder.Place place) {
      return status;
    }
  }

  /**
   * {@link Durability#WRITE_BEHIND}: each block is queued behind its put, and a put waits while
   * more than the window of acknowledged blocks is not yet down; while writes to the lower tier
   * fail and the window is full of blocks only RAM holds, puts are refused.
   */
  static final class WriteBehind extends PutPolicy {
    WriteBehind(SpillQueue spills) {
      super(spills);
    }

    @Override
    boolean backlogMakesWait(int length) {
      return spills.backlogPastHalf(length);
    }

    @Override
    boolean reservesPlace() {
      return true;
    }

    @Override
    boolean refuses() {
      return spills.refusesWriteBehind();
    }

    @Override
    void enlist(SpillEntry copy, SpillOrder.Place place) {
      if (place != null) {
        spills.queueCopy(copy, place);
      } else {
        spills.queueCopy(copy);
      }
    }

    @Override
    PutStatus settle(BlockKey key, PutStatus status, SpillEntry copy, SpillEntry evicted,
        SpillOrder.Place place) {
      if (place == null) {
        spills.awaitBacklog(copy);
      } else if (copy == null) {
        spills.release(place);
        SpillEntry passedOn = spills.find(key); // RAM evicted the block at once: its spill
        if (passedOn != null) { // registered after the place: the one case that may wait here
          spills.awaitBacklog(passedOn);
        }
      } // else behind less than half a window when it was reserved: nothing to wait for
      return status;
    }
  }

  /**
   * {@link Durability#WRITE_THROUGH}: the put writes its block to the lower tier on its own thread
   * and answers the lower tier's status; a block the lower tier does not store leaves RAM again.
   */
  static final class WriteThrough extends PutPolicy {
    private final RamTier ram;
    private final Tier lower;
    private final CopyCoherence copies;

    WriteThrough(SpillQueue spills, RamTier ram, Tier lower, CopyCoherence copies) {
      super(spills);
      this.ram = ram;
      this.lower = lower;
      this.copies = copies;
    }

    @Override
    boolean commitsWait() {
      return true;
    }

    @Override
    boolean storesThrough() {
      return true;
    }

    @Override
    void enlist(SpillEntry copy, SpillOrder.Place place) {
      spills.list(copy);
    }

    /**
     * Writes the block just stored in RAM to the lower tier on this thread, or waits for the spill
     * of it if RAM evicted it at once. A block the lower tier does not store leaves RAM again,
     * unless a later put or delete of its key already replaced it.
     */
    @Override
    PutStatus settle(BlockKey key, PutStatus inRam, SpillEntry copy, SpillEntry evicted,
        SpillOrder.Place place) {
      if (copy == null) {
        if (evicted != null) {
          PutStatus written = spills.writeNow(evicted, false);
          return written == null && evicted.cancelled() ? PutStatus.STORED : orNoSpace(written);
        }
        return inRam == PutStatus.STORED && !lower.contains(key) ? PutStatus.NOT_ADMITTED : inRam;
      }
      PutStatus written = spills.writeNow(copy, true);
      int stripe = KeyStripes.of(key);
      ReentrantLock lock = copies.stripes().lock(stripe);
      lock.lock();
      try {
        if (spills.unlist(copy) && written != PutStatus.STORED) {
          copies.stripes().bump(stripe);
          ram.delete(key);
          copies.stripes().bump(stripe);
        }
      } finally {
        lock.unlock();
      }
      return written == null && copy.cancelled() ? PutStatus.STORED : orNoSpace(written);
    }

    /** The lower tier's answer to a write, a write that threw counting as no room. */
    private static PutStatus orNoSpace(PutStatus written) {
      return written == null ? PutStatus.REJECTED_NO_SPACE : written;
    }
  }
}
