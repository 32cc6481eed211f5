package dev.kvcache.tiered;

import dev.kvcache.BlockKey;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Lock stripes over keys, each with a generation. Puts, deletes and promotions of one key hold
 * its stripe's lock; puts and deletes bump the generation both before and after they change the
 * tiers, so that a read which took the generation before it asked the lower tier can tell that
 * what it read may be older than RAM's, and not promote it.
 */
final class KeyStripes {

  private static final int COUNT = 256;

  private final Object[] locks = new Object[COUNT];
  private final AtomicLongArray generations = new AtomicLongArray(COUNT);

  KeyStripes() {
    for (int i = 0; i < COUNT; i++) {
      locks[i] = new Object();
    }
  }

  /** The stripe of {@code key}. */
  static int of(BlockKey key) {
    return (int) (key.lo() & (COUNT - 1));
  }

  Object lock(int stripe) {
    return locks[stripe];
  }

  long generation(int stripe) {
    return generations.get(stripe);
  }

  void bump(int stripe) {
    generations.incrementAndGet(stripe);
  }

  /** Every stripe's generation now, by stripe. */
  long[] generations() {
    long[] now = new long[COUNT];
    for (int i = 0; i < COUNT; i++) {
      now[i] = generations.get(i);
    }
    return now;
  }
}
