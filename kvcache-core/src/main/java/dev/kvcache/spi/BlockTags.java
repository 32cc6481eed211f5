package dev.kvcache.spi;

import dev.kvcache.BlockKey;

/**
 * A {@link BlockListener} that also names blocks: a tier that keeps tags asks it for the tag of
 * each block it writes ({@link #tagOf}), keeps those few bytes with the block, and gives them back
 * when it finds the block again after a restart ({@link #found}). What a tag means is the
 * listener's (the server keeps the name an engine gave the block, so that it can tell routers of
 * the block's eviction after a restart); a tier neither reads nor changes it.
 *
 * <p>A tag is kept as a block is written into the tier: a block stored before its tag was known,
 * or into a tier that keeps no tags, has none. Tiers check their tags as they check blocks: a
 * damaged tag is dropped, never given back wrong, and the block stays.
 */
public interface BlockTags extends BlockListener {

  /** The most bytes a tag may have: a longer one is not kept. */
  int MAX_TAG_BYTES = 4000;

  /**
   * The tag to keep with block {@code key} as a tier writes it; null (or empty) for none. Called
   * on the writing thread: it must return quickly and must not call back into the tier.
   */
  byte[] tagOf(BlockKey key);

  /**
   * The tier named {@code tier} holds block {@code key}, which it kept with {@code tag}: told for
   * each tagged block a tier holds when the listener is handed to it ({@link Tier#listen}), from
   * a thread of the tier's, as it reads them; a tier that cannot list its tags (an object store,
   * listed without its objects' metadata) tells each as it reads its block, maybe again and again.
   */
  void found(String tier, BlockKey key, byte[] tag);

  /**
   * The tier named {@code tier} has told every tagged block it held when the listener was handed
   * to it ({@link #found}); not told if the tier closed first.
   */
  default void foundAll(String tier) {}
}
