package dev.kvcache.tiered;

import dev.kvcache.BlockKey;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Lock stripes over keys, each with a generation. Puts, deletes and promotions of one key hold
 * its stripe's lock; puts and deletes bump the generation both before and after they change the
 * tiers, so that a read which took the generation before it asked the lower tier can tell that
 * what it read may be older than RAM's, and not promote it.
 *
 * <p>A stripe's lock may be held across a lower tier's write or delete of one of its keys: a
 * thread that must not wait (a network event loop) only ever {@linkplain ReentrantLock#tryLock()
 * tries} it, and goes another way when it is taken.
 */
final class KeyStripes {

  private static final int COUNT = 256;

  private final ReentrantLock[] locks = new ReentrantLock[COUNT];
  private final AtomicLongArray generations = new AtomicLongArray(COUNT);

  KeyStripes() {
    for (int i = 0; i < COUNT; i++) {
      locks[i] = new ReentrantLock();
    }
  }

  /** The stripe of {@code key}. */
  static int of(BlockKey key) {
    return (int) (key.lo() & (COUNT - 1));
  }

  ReentrantLock lock(int stripe) {
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
