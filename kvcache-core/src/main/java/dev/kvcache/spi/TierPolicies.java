package dev.kvcache.spi;

import dev.kvcache.Namespace;
import dev.kvcache.seal.MasterKeys;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * What a cache asks of a lower tier it opens for some namespaces ({@link TierFactory#open(
 * TierSettings, int, TierPolicies)}): the bytes each may take at most, and which are sealed at
 * rest under which master keys.
 *
 * @param quotas the bytes each of these namespaces' blocks may take at most in the tier
 * @param masterKeys the master keys the sealed namespaces' blocks are sealed under; null if none
 *     is sealed
 * @param sealed the namespaces whose blocks the tier seals at rest
 */
public record TierPolicies(Map<Namespace, Long> quotas, MasterKeys masterKeys,
    Set<Namespace> sealed) {

  /** No quota, nothing sealed. */
  public static final TierPolicies NONE = new TierPolicies(Map.of(), null, Set.of());

  /**
   * @throws IllegalArgumentException if namespaces are sealed without master keys
   */
  public TierPolicies {
    quotas = Map.copyOf(quotas);
    sealed = Set.copyOf(sealed);
    if (!sealed.isEmpty()) {
      Objects.requireNonNull(masterKeys, "masterKeys of the sealed namespaces");
    }
  }
}
