package dev.kvcache;

/**
 * A snapshot of a cache's or tier's counters. Counters only grow over the cache's life; gauges
 * ({@code blocks}, {@code bytesUsed}, {@code leasesOpen}) give the current value.
 *
 * @param hits reads that found their block (leases and copying reads)
 * @param misses reads that found nothing
 * @param puts blocks written ({@link PutStatus#STORED} or {@link PutStatus#NOT_ADMITTED})
 * @param evictions blocks the eviction policy removed to make room
 * @param rejections puts refused ({@link PutStatus#REJECTED_TOO_LARGE} or {@link
 *     PutStatus#REJECTED_NO_SPACE})
 * @param deletes blocks removed by an explicit delete
 * @param blocks blocks currently findable
 * @param bytesUsed bytes of the tier's budget in use, including rounding and memory still pinned
 *     by leases on removed blocks
 * @param capacityBytes the tier's hard budget
 * @param leasesOpen leases not yet closed
 * @param compactions times the allocator slid blocks together to make a contiguous free range
 * @param bytesCompacted bytes moved by those compactions
 */
public record CacheStats(
    long hits,
    long misses,
    long puts,
    long evictions,
    long rejections,
    long deletes,
    long blocks,
    long bytesUsed,
    long capacityBytes,
    long leasesOpen,
    long compactions,
    long bytesCompacted) {

  /**
   * Prompt tokens whose prefill the hits saved, for blocks of {@code tokensPerBlock} tokens each
   * (the engine's block size): every hit is one block the engine loaded instead of computing.
   *
   * @throws IllegalArgumentException if {@code tokensPerBlock} is not positive
   */
  public long prefillTokensAvoided(int tokensPerBlock) {
    if (tokensPerBlock < 1) {
      throw new IllegalArgumentException("tokensPerBlock must be positive, got " + tokensPerBlock);
    }
    return hits * tokensPerBlock;
  }

  /** Hits over all reads, or 0 before the first read. */
  public double hitRatio() {
    long reads = hits + misses;
    return reads == 0 ? 0 : (double) hits / reads;
  }
}
