package dev.kvcache.spi;

import dev.kvcache.BlockLease;

/**
 * Receives the blocks a tier's eviction policy removes, so that the next tier down can keep them.
 *
 * <p>The block is leaving the tier's index when the listener is called; the lease keeps
 * its bytes pinned (and counted against the tier's budget) until the listener closes it, so the
 * listener may hand the lease to a background writer instead of copying. It is called on the
 * thread that triggered the eviction, inside the tier's eviction step and atomically with the
 * removal (a put of the same key waits until the listener returns): it must return quickly, must
 * not call back into the evicting tier, and must eventually close the lease, or the tier fills with
 * pinned memory and rejects puts with {@link dev.kvcache.PutStatus#REJECTED_NO_SPACE}.
 */
@FunctionalInterface
public interface BlockEvictionListener {

  /** Takes ownership of {@code lease}, which holds the evicted block. */
  void onEvicted(BlockLease lease);
}
