package dev.kvcache.spi;

import dev.kvcache.BlockKey;
import java.util.Objects;

/** The checks every tier makes on a block before it stores it, for tier implementations. */
public final class PutChecks {

  private PutChecks() {}

  /**
   * Whether a block of {@code length} bytes fits a tier whose largest block is {@code
   * maxBlockBytes}; a block that does not is counted as a rejection, and the tier answers {@link
   * dev.kvcache.PutStatus#REJECTED_TOO_LARGE}.
   *
   * @throws NullPointerException if {@code key} is null
   * @throws IllegalArgumentException if {@code length} is not positive
   */
  public static boolean fits(BlockKey key, int length, int maxBlockBytes, TierCounters counters) {
    Objects.requireNonNull(key, "key");
    if (length <= 0) {
      throw new IllegalArgumentException(
          "cannot store an empty block under key " + key + ", got a length of " + length);
    }
    if (length > maxBlockBytes) {
      counters.rejection();
      return false;
    }
    return true;
  }
}
