package dev.kvcache.disk.internal;

import dev.kvcache.BlockKey;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A Bloom filter of keys seen (three hash functions over the key's two halves), cleared once it
 * holds an eighth as many keys as it has bits, which keeps false positives near 3%. Thread-safe
 * without locks; a race can at worst let a key through once more or once less.
 */
public final class Doorkeeper {

  private final AtomicLongArray bits;
  private final int mask;
  private final int limit;
  private final AtomicInteger added = new AtomicInteger();

  /** A filter of about {@code bits} bits (a power of two, at least 64). */
  public Doorkeeper(int bits) {
    int size = Integer.highestOneBit(Math.max(64, bits));
    this.bits = new AtomicLongArray(size / 64);
    this.mask = size - 1;
    this.limit = size / 8;
  }

  /** Whether {@code key} was seen since the last reset; remembers it if not. */
  public boolean seenOrRemember(BlockKey key) {
    long h1 = key.hi() * 0x9e3779b97f4a7c15L;
    long h2 = key.lo() * 0xc2b2ae3d27d4eb4fL | 1;
    boolean seen = true;
    for (int i = 0; i < 3; i++) {
      int bit = (int) ((h1 + i * h2) >>> 32) & mask;
      long word = 1L << (bit & 63);
      long old = bits.getAndUpdate(bit >>> 6, w -> w | word);
      seen &= (old & word) != 0;
    }
    if (!seen && added.incrementAndGet() >= limit) {
      for (int i = 0; i < bits.length(); i++) {
        bits.set(i, 0);
      }
      added.set(0);
    }
    return seen;
  }
}
