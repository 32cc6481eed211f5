package dev.kvcache.spi;

import dev.kvcache.CacheStats;
import java.util.concurrent.atomic.LongAdder;

/**
 * The counters every tier keeps, for tier implementations: thread-safe, cheap under contention,
 * and turned into a {@link CacheStats} snapshot with the tier's own gauges.
 */
public final class TierCounters {

  private final LongAdder hits = new LongAdder();
  private final LongAdder misses = new LongAdder();
  private final LongAdder puts = new LongAdder();
  private final LongAdder evictions = new LongAdder();
  private final LongAdder rejections = new LongAdder();
  private final LongAdder deletes = new LongAdder();
  private final LongAdder leasesOpen = new LongAdder();

  public void hit() {
    hits.increment();
  }

  /** Counts {@code n} hits at once (the blocks of a prefix pin). */
  public void hits(int n) {
    hits.add(n);
  }

  public void miss() {
    misses.increment();
  }

  public void put() {
    puts.increment();
  }

  public void eviction() {
    evictions.increment();
  }

  public void rejection() {
    rejections.increment();
  }

  public void delete() {
    deletes.increment();
  }

  public void leaseOpened() {
    leasesOpen.increment();
  }

  public void leaseClosed() {
    leasesOpen.decrement();
  }

  /** The counters with the tier's gauges, as {@link CacheStats} documents them. */
  public CacheStats snapshot(long blocks, long bytesUsed, long capacityBytes, long compactions,
      long bytesCompacted) {
    return new CacheStats(hits.sum(), misses.sum(), puts.sum(), evictions.sum(), rejections.sum(),
        deletes.sum(), blocks, bytesUsed, capacityBytes, leasesOpen.sum(), compactions,
        bytesCompacted);
  }
}
