package dev.kvcache.tiered;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.CacheStats;
import dev.kvcache.GetStatus;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.spi.BlockEvictionListener;
import dev.kvcache.spi.LoadRate;
import dev.kvcache.spi.Tier;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * A tier whose puts can be held back, to keep spills waiting, slowed, or refused as a full disk
 * refuses them, and whose single-key reads can be slowed, as a slow tier's; counts the puts (in all and per
 * key), batch reads, lookups, pins and single-key probes it receives. It times its copying reads
 * for its {@link #loadRate()}, delay included, as a real tier does. It can keep the inner tier's
 * evictions back and hand them over later, and run a test's action inside a probe or delete of a
 * key, between two steps of the cache that calls it.
 */
public final class GatedTier implements Tier {

  private final Tier inner;
  private boolean held;
  /** A key whose puts wait until {@link #release()}, while others pass; null for none. */
  private BlockKey heldKey;
  /** Puts that may pass while held. */
  private int permits;
  /** Whether puts are answered {@link PutStatus#REJECTED_NO_SPACE}, as by a full disk. */
  volatile boolean full;
  /** Whether closing leaves the inner tier open, for a test to read what it holds afterwards. */
  volatile boolean keepInnerOpen;
  final AtomicInteger putsStarted = new AtomicInteger();
  final Map<BlockKey, AtomicInteger> putsByKey = new ConcurrentHashMap<>();
  final AtomicInteger batchReads = new AtomicInteger();
  final AtomicInteger lookups = new AtomicInteger();
  final AtomicInteger pins = new AtomicInteger();
  final AtomicInteger probes = new AtomicInteger();
  /** Milliseconds each {@code put} takes beyond the inner tier's. */
  public volatile long putDelayMillis;
  private final AtomicInteger putsUnderWay = new AtomicInteger();
  /** The most puts seen under way at once. */
  final AtomicInteger maxPutsUnderWay = new AtomicInteger();
  /** Milliseconds each {@code get} and {@code getInto} takes beyond the inner tier's. */
  public volatile long readDelayMillis;
  private final LoadRate loadRate = new LoadRate();
  /** A key whose evictions are kept back until {@link #handOverEvictions()}; null for none. */
  volatile BlockKey holdEvictionsOf;
  private final Queue<BlockLease> heldEvictions = new ConcurrentLinkedQueue<>();
  private volatile BlockEvictionListener evictionListener;
  private final Map<BlockKey, Runnable> onContains = new ConcurrentHashMap<>();
  private final Map<BlockKey, Runnable> onDelete = new ConcurrentHashMap<>();

  public GatedTier(Tier inner) {
    this.inner = inner;
  }

  /** Runs {@code action} on the calling thread at the next {@code contains(key)}, before it answers. */
  void onNextContains(BlockKey key, Runnable action) {
    onContains.put(key, action);
  }

  /** Runs {@code action} on the calling thread at the next {@code delete(key)}, before it deletes. */
  void onNextDelete(BlockKey key, Runnable action) {
    onDelete.put(key, action);
  }

  /** Puts started from now on wait until {@link #release()}. */
  synchronized void hold() {
    held = true;
  }

  /** Puts of {@code key} started from now on wait until {@link #release()}; others pass. */
  synchronized void hold(BlockKey key) {
    heldKey = key;
  }

  synchronized void release() {
    held = false;
    heldKey = null;
    notifyAll();
  }

  /** Lets {@code n} more puts pass while held, the ones waiting first (in no set order). */
  synchronized void allow(int n) {
    permits += n;
    notifyAll();
  }

  private synchronized void awaitRelease(BlockKey key) {
    while (key.equals(heldKey) || (held && permits == 0)) {
      try {
        wait();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
    if (held) {
      permits--;
    }
  }

  @Override
  public PutStatus put(BlockKey key, ByteBuffer src) {
    putsStarted.incrementAndGet();
    putsByKey.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
    awaitRelease(key);
    maxPutsUnderWay.accumulateAndGet(putsUnderWay.incrementAndGet(), Math::max);
    try {
      delay(putDelayMillis);
      return full ? PutStatus.REJECTED_NO_SPACE : inner.put(key, src);
    } finally {
      putsUnderWay.decrementAndGet();
    }
  }

  @Override
  public GetStatus[] getAllInto(List<BlockKey> keys, List<ByteBuffer> dsts) {
    batchReads.incrementAndGet();
    return inner.getAllInto(keys, dsts);
  }

  private void slowDown() {
    delay(readDelayMillis);
  }

  private static void delay(long millis) {
    long until = System.nanoTime() + millis * 1_000_000;
    while (System.nanoTime() < until) {
      LockSupport.parkNanos(until - System.nanoTime());
    }
  }

  @Override
  public LoadRate loadRate() {
    return loadRate;
  }

  @Override
  public String name() {
    return "gated";
  }

  @Override
  public long capacityBytes() {
    return inner.capacityBytes();
  }

  @Override
  public int maxBlockBytes() {
    return inner.maxBlockBytes();
  }

  @Override
  public BlockLease get(BlockKey key) {
    probes.incrementAndGet();
    slowDown();
    return inner.get(key);
  }

  @Override
  public int lookupPrefix(List<BlockKey> keys) {
    lookups.incrementAndGet();
    return inner.lookupPrefix(keys);
  }

  @Override
  public PrefixPin pinPrefix(List<BlockKey> keys, Duration timeout) {
    pins.incrementAndGet();
    return inner.pinPrefix(keys, timeout);
  }

  @Override
  public GetStatus getInto(BlockKey key, ByteBuffer dst) {
    long start = System.nanoTime();
    int position = dst.position();
    slowDown();
    GetStatus status = inner.getInto(key, dst);
    if (status == GetStatus.HIT) {
      loadRate.record(dst.position() - position, System.nanoTime() - start);
    }
    return status;
  }

  @Override
  public boolean contains(BlockKey key) {
    probes.incrementAndGet();
    Runnable action = onContains.remove(key);
    if (action != null) {
      action.run();
    }
    return inner.contains(key);
  }

  @Override
  public boolean delete(BlockKey key) {
    Runnable action = onDelete.remove(key);
    if (action != null) {
      action.run();
    }
    return inner.delete(key);
  }

  @Override
  public CacheStats stats() {
    return inner.stats();
  }

  /**
   * Forwards the inner tier's evictions to {@code listener}, or keeps those of {@link
   * #holdEvictionsOf} until {@link #handOverEvictions()}: an eviction handed over late, as a
   * disk tier's drop on a thread of its own hands it over.
   */
  @Override
  public boolean onEviction(BlockEvictionListener listener) {
    evictionListener = listener;
    return inner.onEviction(lease -> {
      if (lease.key().equals(holdEvictionsOf)) {
        heldEvictions.add(lease);
      } else {
        listener.onEvicted(lease);
      }
    });
  }

  /** Hands the evictions kept back to the listener, in the order they came. */
  void handOverEvictions() {
    for (BlockLease lease; (lease = heldEvictions.poll()) != null; ) {
      evictionListener.onEvicted(lease);
    }
  }

  @Override
  public void close() {
    release();
    if (!keepInnerOpen) {
      inner.close();
    }
  }
}
