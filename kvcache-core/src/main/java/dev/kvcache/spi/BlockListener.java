package dev.kvcache.spi;

import dev.kvcache.BlockKey;

/**
 * Told which blocks come to be held by a tier and which leave it ({@link Tier#listen}), tier by
 * tier: a block that moves down a stack (evicted from RAM, spilled to disk) leaves one tier and is
 * stored in another, and a block copied up (promoted into RAM) is stored again above while it stays
 * below. What a router learns of a cache comes from here.
 *
 * <p>Called on the thread that stored or dropped the block, once it is done (a put's block is
 * findable, a dropped one is not): a listener must return quickly, must not wait, and must not call
 * back into the tier. A block stored again under its key (a put over it) is stored again; a block
 * moved within a tier (compacted) is neither. Closing a tier tells nothing.
 */
public interface BlockListener {

  /** Block {@code key} is now held by the tier named {@code tier} ({@link Tier#name()}). */
  void stored(String tier, BlockKey key);

  /**
   * Block {@code key} has left the tier named {@code tier}: evicted, deleted, dropped as damaged,
   * found gone, or dropped with its namespace.
   */
  void removed(String tier, BlockKey key);
}
