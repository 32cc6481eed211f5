package dev.kvcache.spi;

import dev.kvcache.Namespace;

/**
 * A capability of a tier ({@link Tier#capability}): dropping every block of a namespace at once,
 * whoever stored them, as the object tier drops a namespace's folder of the bucket a fleet shares
 * (a retired model, say).
 */
public interface NamespaceDrop {

  /**
   * Drops the namespace's blocks.
   *
   * @return the blocks queued for deletion
   * @throws IllegalStateException if the store failed to list them
   */
  long dropNamespace(Namespace namespace);
}
