package dev.kvcache.internal.memory;

/**
 * How many bytes of other blocks one allocation may move to make room. A put shares one budget
 * across all its attempts, so evict-and-retry loops cannot add up to unbounded copying.
 */
public final class CompactionBudget {

  /** No compaction at all: allocation only looks for a free run. */
  public static final CompactionBudget NONE = new CompactionBudget(0);

  private long remainingBytes;

  private CompactionBudget(long remainingBytes) {
    this.remainingBytes = remainingBytes;
  }

  /** A budget of {@code bytes} bytes moved. */
  public static CompactionBudget bounded(long bytes) {
    return new CompactionBudget(Math.max(0, bytes));
  }

  /** No limit: compact as much as the request needs. */
  public static CompactionBudget unbounded() {
    return new CompactionBudget(Long.MAX_VALUE);
  }

  /** Whether a block of {@code bytes} may still be moved. */
  boolean allows(long bytes) {
    return bytes <= remainingBytes;
  }

  void spend(long bytes) {
    remainingBytes -= bytes;
  }

  public long remainingBytes() {
    return remainingBytes;
  }
}
