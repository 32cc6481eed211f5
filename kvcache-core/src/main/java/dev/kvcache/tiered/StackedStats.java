package dev.kvcache.tiered;

/**
 * How a {@link StackedTier}'s uploads to its backing tier are doing.
 *
 * @param uploadsWaiting keys queued or being uploaded
 * @param uploaded blocks the backing tier stored
 * @param uploadsDropped blocks not uploaded: the queue was full, or the upper tier no longer held
 *     them when their turn came
 * @param uploadFailures uploads the backing tier refused or failed
 */
public record StackedStats(long uploadsWaiting, long uploaded, long uploadsDropped,
    long uploadFailures) {}
