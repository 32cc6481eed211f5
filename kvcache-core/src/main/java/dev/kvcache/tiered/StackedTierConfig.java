package dev.kvcache.tiered;

import java.time.Duration;
import java.util.Objects;

/**
 * How a {@link StackedTier} uploads blocks to its backing tier.
 *
 * @param uploadQueueBlocks keys that may wait for upload at once (default {@value
 *     #DEFAULT_UPLOAD_QUEUE_BLOCKS}); a waiting key holds no memory of its own, its bytes stay in
 *     the upper tier. A block put while the queue is full is not uploaded.
 * @param uploadThreads threads that upload, each one block at a time (default {@value
 *     #DEFAULT_UPLOAD_THREADS}): an object store answers a PUT in tens of milliseconds, so its
 *     throughput comes from uploads under way at once
 * @param closeWait how long closing waits for the queued uploads (default 30 s); what is left
 *     then is not uploaded
 */
public record StackedTierConfig(int uploadQueueBlocks, int uploadThreads, Duration closeWait) {

  public static final int DEFAULT_UPLOAD_QUEUE_BLOCKS = 1024;
  public static final int DEFAULT_UPLOAD_THREADS = 8;
  public static final Duration DEFAULT_CLOSE_WAIT = Duration.ofSeconds(30);
  /** The most upload threads. */
  public static final int MAX_UPLOAD_THREADS = 256;

  public StackedTierConfig {
    Objects.requireNonNull(closeWait, "closeWait");
    if (uploadQueueBlocks < 1) {
      throw new IllegalArgumentException(
          "the upload queue must hold at least one block, got " + uploadQueueBlocks);
    }
    if (uploadThreads < 1 || uploadThreads > MAX_UPLOAD_THREADS) {
      throw new IllegalArgumentException(
          "upload threads must be 1 to " + MAX_UPLOAD_THREADS + ", got " + uploadThreads);
    }
    if (closeWait.isNegative()) {
      throw new IllegalArgumentException("the close wait must not be negative, got " + closeWait);
    }
  }

  /** The defaults. */
  public static StackedTierConfig defaults() {
    return new StackedTierConfig(DEFAULT_UPLOAD_QUEUE_BLOCKS, DEFAULT_UPLOAD_THREADS,
        DEFAULT_CLOSE_WAIT);
  }
}
