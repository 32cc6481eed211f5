package dev.kvcache.tiered;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.PrefixPin;
import dev.kvcache.spi.PinnedPrefix;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierCounters;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The prefix pin of a stack of two levels, which {@link TieredCache} (RAM and its spill queue over
 * a lower tier) and {@link StackedTier} (an upper tier and its upload queue over a backing tier)
 * share: the leading keys are pinned where they are found, a key held above under a lease from
 * above, and each run of keys after one up to the next held above with one {@link Tier#pinPrefix}
 * call below, which keeps those blocks in its own way (a remote tier under its servers' leases, an
 * object tier fetching a block only when it is read). A key held above is pinned above, never
 * below. Each block pinned below counts as a hit of the stack, the first key found in neither
 * level as a miss.
 */
final class PrefixWalk {

  private PrefixWalk() {}

  /**
   * Pins the leading keys of {@code keys} either level holds, into {@code pinned}.
   *
   * @param leaseAbove a lease on the key's copy above, counted as the caller counts a hit above;
   *     null if none is held there
   * @param heldAbove whether a copy of the key is held above (a key after the first of a run
   *     ends it)
   * @param pinnableBelow whether the key may be pinned below (one that may not ends the pin)
   * @param belowHits counts the blocks pinned below
   * @throws RuntimeException from a level, after letting go of what was pinned
   */
  static PrefixPin pin(List<BlockKey> keys, Duration timeout, TieredPin pinned,
      Function<BlockKey, BlockLease> leaseAbove, Predicate<BlockKey> heldAbove,
      Predicate<BlockKey> pinnableBelow, Tier below, LongAdder belowHits,
      TierCounters counters) {
    try {
      int n = 0;
      while (n < keys.size()) {
        BlockLease above = leaseAbove.apply(keys.get(n));
        if (above != null) {
          pinned.add(above);
          n++;
          continue;
        }
        int end = n;
        while (end < keys.size() && pinnableBelow.test(keys.get(end))
            && (end == n || !heldAbove.test(keys.get(end)))) {
          end++;
        }
        int held = end == n ? 0 : pinned.add(below.pinPrefix(keys.subList(n, end), timeout));
        belowHits.add(held);
        counters.hits(held);
        n += held;
        if (held == 0 || n < end) {
          break; // neither level holds keys[n]
        }
      }
      if (n < keys.size()) {
        counters.miss();
      }
      return PinnedPrefix.over(pinned, timeout);
    } catch (RuntimeException | Error e) {
      pinned.release();
      throw e;
    }
  }
}
