package dev.kvcache.server.cache;

import dev.kvcache.Namespace;
import dev.kvcache.seal.MasterKeys;
import java.util.Set;

/**
 * The namespaces sealed at rest and the master keys they are sealed under, from {@code
 * kvcache.sealing.*} ({@link SealingSettings}) once the namespaces are known.
 *
 * @param masterKeys the master keys; null when no namespace is sealed
 * @param namespaces the sealed namespaces
 */
public record SealedNamespaces(MasterKeys masterKeys, Set<Namespace> namespaces) {

  /** No namespace sealed. */
  public static final SealedNamespaces NONE = new SealedNamespaces(null, Set.of());

  public SealedNamespaces {
    namespaces = Set.copyOf(namespaces);
    if (masterKeys == null && !namespaces.isEmpty()) {
      throw new IllegalArgumentException("sealed namespaces need master keys");
    }
  }
}
