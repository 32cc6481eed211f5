package dev.kvcache.spi;

import dev.kvcache.Namespace;
import java.util.Map;

/**
 * A capability of a tier ({@link Tier#capability}): removing every block of a namespace it holds,
 * and a stack's, from each of its tiers (a tenant that leaves, a retired model). A tier that seals
 * the namespace at rest destroys its salt first ({@link #shredNamespace}), so that what it holds
 * there opens nowhere from then on, before any block is removed. A stack offers this itself: its
 * capability covers every tier in it, top down, with the blocks on their way between them.
 * Blocks stored into the namespace while it is removed may or may not survive.
 */
public interface NamespaceRemoval {

  /**
   * Destroys the namespace's salts at rest, in this tier and a stack's tiers: no block of it
   * sealed there opens again (a later sealed put makes a new salt).
   *
   * @return whether any tier had one
   * @throws java.io.UncheckedIOException if a salt could not be deleted
   * @throws IllegalStateException if a store failed to delete one
   */
  boolean shredNamespace(Namespace namespace);

  /**
   * Shreds the namespace ({@link #shredNamespace}), then removes its blocks: from RAM and the disk
   * at once, from an object store's bucket by deletes queued behind the call (every server's
   * objects of it).
   *
   * @return the blocks removed or queued for deletion, by tier name ({@link Tier#name()}), in
   *     the order of the tiers
   * @throws java.io.UncheckedIOException if a tier's storage failed
   * @throws IllegalStateException if a store failed to list the namespace's objects (what was
   *     queued is deleted; the call can be repeated)
   */
  Map<String, Long> removeNamespace(Namespace namespace);
}
