package dev.kvcache.tiered;

import dev.kvcache.spi.TierSettings;
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
 * @param upload which blocks go up: every block put ({@link Upload#EVERY_BLOCK}, the default) or
 *     only those the upper tier evicts ({@link Upload#EVICTED})
 */
public record StackedTierConfig(int uploadQueueBlocks, int uploadThreads, Duration closeWait,
    Upload upload) {

  /** Which blocks a {@link StackedTier} uploads to its backing tier. */
  public enum Upload {
    /**
     * Every block put in the upper tier, behind the put: the backing tier (a bucket a fleet
     * shares) has each block a moment after it is stored, so the fleet finds it at once and a
     * server that is lost loses nothing stored. Costs one upload per block put.
     */
    EVERY_BLOCK,
    /**
     * Only the blocks the upper tier evicts (a disk tier's live blocks of a super-block it drops),
     * so the backing tier adds capacity and sees one upload per block that leaves the disk; what
     * is still on a server's disk is not in the backing tier, and is lost with the server. Needs
     * an upper tier that reports evictions ({@link dev.kvcache.spi.Tier#onEviction}).
     */
    EVICTED
  }

  public static final int DEFAULT_UPLOAD_QUEUE_BLOCKS = 1024;
  public static final int DEFAULT_UPLOAD_THREADS = 8;
  public static final Duration DEFAULT_CLOSE_WAIT = Duration.ofSeconds(30);
  /** The most upload threads. */
  public static final int MAX_UPLOAD_THREADS = 256;

  public StackedTierConfig {
    Objects.requireNonNull(closeWait, "closeWait");
    Objects.requireNonNull(upload, "upload");
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
        DEFAULT_CLOSE_WAIT, Upload.EVERY_BLOCK);
  }

  /**
   * Reads the settings {@code upload-queue-blocks}, {@code upload-threads}, {@code close-wait} and
   * {@code upload} ({@code every_block} or {@code evicted}); an absent one takes its default.
   *
   * @throws IllegalArgumentException naming the setting that is malformed or out of range
   */
  public static StackedTierConfig read(TierSettings settings) {
    StackedTierConfig d = defaults();
    return new StackedTierConfig(
        settings.integer("upload-queue-blocks", d.uploadQueueBlocks(), 1, Integer.MAX_VALUE),
        settings.integer("upload-threads", d.uploadThreads(), 1, MAX_UPLOAD_THREADS),
        settings.duration("close-wait", d.closeWait()),
        settings.choice("upload", Upload.class, d.upload()));
  }

  /** These settings, uploading {@code upload}. */
  public StackedTierConfig withUpload(Upload upload) {
    return new StackedTierConfig(uploadQueueBlocks, uploadThreads, closeWait, upload);
  }
}
