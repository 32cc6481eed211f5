package dev.kvcache.disk.internal;

import java.nio.ByteBuffer;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Page-aligned direct buffers for reads past the page cache, pooled by capacity (powers of two from
 * a page up), so that a read neither allocates nor zeroes memory; the pool keeps at most {@code
 * maxPooledBytes}, and a buffer given back past that is left to the garbage collector.
 */
public final class AlignedBuffers {

  private static final int PAGE = RecordLayout.PAGE;
  private static final int MIN_SHIFT = Integer.numberOfTrailingZeros(PAGE);

  @SuppressWarnings("unchecked")
  private final Queue<ByteBuffer>[] pools = new Queue[31 - MIN_SHIFT];
  private final AtomicLong pooledBytes = new AtomicLong();
  private final long maxPooledBytes;

  /** @param maxPooledBytes bytes of buffers the pool keeps at most */
  public AlignedBuffers(long maxPooledBytes) {
    this.maxPooledBytes = maxPooledBytes;
    for (int i = 0; i < pools.length; i++) {
      pools[i] = new ConcurrentLinkedQueue<>();
    }
  }

  /**
   * A cleared buffer whose address is a multiple of the page, of a capacity at least {@code
   * length} rounded up to the page; give it back with {@link #give}.
   *
   * @throws IllegalArgumentException if {@code length} is not positive or past 1 GiB
   */
  public ByteBuffer take(int length) {
    if (length <= 0 || length > 1 << 30) {
      throw new IllegalArgumentException("no aligned buffer of " + length + " bytes");
    }
    int shift = Math.max(MIN_SHIFT, 32 - Integer.numberOfLeadingZeros(length - 1));
    ByteBuffer b = pools[shift - MIN_SHIFT].poll();
    if (b != null) {
      pooledBytes.addAndGet(-b.capacity());
      return b.clear();
    }
    int capacity = 1 << shift;
    return ByteBuffer.allocateDirect(capacity + PAGE).alignedSlice(PAGE).slice(0, capacity);
  }

  /** Gives back a buffer {@link #take} returned; nothing may use it afterwards. */
  public void give(ByteBuffer b) {
    int capacity = b.capacity();
    if (pooledBytes.addAndGet(capacity) > maxPooledBytes) {
      pooledBytes.addAndGet(-capacity);
      return;
    }
    pools[Integer.numberOfTrailingZeros(capacity) - MIN_SHIFT].offer(b);
  }
}
