package dev.kvcache.tiered;

import dev.kvcache.BlockKey;
import dev.kvcache.ram.RamTier;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The coherence of a block's copies in a {@link TieredCache}, which its writes and its reads
 * ({@link TieredReads}) share: the key stripes that serialise the puts, deletes and promotions of a
 * key, with the generations a promotion checks; the clean set, the keys whose copy in RAM the lower
 * tier also holds (promoted from it, or written behind or through) and that RAM's eviction need
 * not write again; and the removal of a key's copies above the lower tier before a put or delete.
 */
final class CopyCoherence {

  private final RamTier ram;
  private final SpillQueue spills;
  private final KeyStripes stripes = new KeyStripes();
  private final Set<BlockKey> clean = ConcurrentHashMap.newKeySet();

  CopyCoherence(RamTier ram, SpillQueue spills) {
    this.ram = ram;
    this.spills = spills;
  }

  /** The stripes whose locks serialise the puts, deletes and promotions of a key. */
  KeyStripes stripes() {
    return stripes;
  }

  /**
   * Removes the key's copy from RAM and from the spill queue (waiting out a spill under way).
   *
   * @param wait whether to wait for the key's stripe; if not, and it is taken, nothing is done
   * @return whether it was done
   */
  boolean dropOldCopy(BlockKey key, boolean wait) {
    int stripe = KeyStripes.of(key);
    ReentrantLock lock = stripes.lock(stripe);
    if (wait) {
      lock.lock();
    } else if (!lock.tryLock()) {
      return false;
    }
    try {
      stripes.bump(stripe);
      boolean done = true;
      if (wait) {
        removeAbove(key);
      } else {
        done = removeAboveNow(key);
      }
      stripes.bump(stripe);
      return done;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Removes the key's copy from RAM (a delete, not an eviction: it is not spilled) and from the
   * spill queue, waiting out a write of it under way; then forgets that the lower tier held it,
   * which such a write may have just recorded. Under the key's stripe lock.
   */
  boolean removeAbove(BlockKey key) {
    boolean removed = ram.delete(key);
    removed |= spills.cancel(key);
    clean.remove(key);
    return removed;
  }

  /**
   * As {@link #removeAbove}, for a thread that must not wait: false if a write of the key's copy
   * to the lower tier is under way, found before RAM's copy is removed or after (RAM may evict it
   * until then, and a spill thread take it at once). RAM's copy may be gone even then.
   */
  private boolean removeAboveNow(BlockKey key) {
    if (!spills.tryCancel(key)) {
      return false;
    }
    ram.delete(key);
    clean.remove(key);
    return spills.tryCancel(key);
  }

  /** Marks the key's copy in RAM as one the lower tier holds too (before a promotion's put). */
  void markClean(BlockKey key) {
    clean.add(key);
  }

  /** Forgets that the lower tier holds the key's copy in RAM. */
  void forgetClean(BlockKey key) {
    clean.remove(key);
  }

  /** Whether the lower tier holds the key's copy in RAM, forgetting it: RAM is evicting it. */
  boolean takeClean(BlockKey key) {
    return clean.remove(key);
  }

  boolean isClean(BlockKey key) {
    return clean.contains(key);
  }

  /**
   * A copy of the key's block has reached the lower tier: RAM's copy is clean, if RAM still holds
   * it (a block RAM evicted while its copy was on the way leaves nothing to mark).
   */
  void copyStored(BlockKey key) {
    if (ram.contains(key)) {
      clean.add(key);
    }
  }
}
