package dev.kvcache.spi;

import java.io.IOException;

/**
 * Opens a tier of one kind from settings, so that a cache assembled from settings can stack tiers
 * that live in other modules (the disk tier in kvcache-disk) without kvcache-core depending on
 * them. Implementations are found with {@link java.util.ServiceLoader}: a module lists its factory
 * in {@code META-INF/services/dev.kvcache.spi.TierFactory}.
 */
public interface TierFactory {

  /** The kind this factory opens, as named in the settings, such as {@code "disk"}. */
  String kind();

  /**
   * Opens a tier.
   *
   * @param settings the settings of this kind's group, without the group's prefix (for the disk
   *     tier, {@code disk.dir} arrives as {@code dir}); the factory reads each one it knows and
   *     calls {@link TierSettings#requireAllRead()}
   * @param maxBlockBytes the largest block the cache above accepts
   * @throws IllegalArgumentException if a setting is missing, malformed or unknown
   * @throws IOException if the tier's storage cannot be opened
   */
  Tier open(TierSettings settings, int maxBlockBytes) throws IOException;

  /**
   * Opens a tier that keeps {@code policies}: quotas per namespace (the bytes each of these
   * namespaces' blocks may take at most in it, the others sharing the rest) and namespaces sealed
   * at rest. A factory whose tier keeps either overrides this; the default opens the tier without
   * them, and refuses any: a tier that cannot seal must not take a sealed namespace's blocks.
   *
   * @throws IllegalArgumentException also if the tier keeps no quotas or seals nothing and some
   *     are asked, or a quota is out of the tier's range
   * @throws IOException if the tier's storage cannot be opened
   */
  default Tier open(TierSettings settings, int maxBlockBytes, TierPolicies policies)
      throws IOException {
    if (!policies.quotas().isEmpty()) {
      throw new IllegalArgumentException("the " + kind() + " tier keeps no quotas per namespace,"
          + " and quotas were given for " + policies.quotas().keySet());
    }
    if (!policies.sealed().isEmpty()) {
      throw new IllegalArgumentException("the " + kind() + " tier does not seal blocks, and "
          + policies.sealed() + " are to be sealed at rest: their blocks would reach it as they"
          + " are");
    }
    return open(settings, maxBlockBytes);
  }
}
