package dev.kvcache.tiered;

/**
 * Where a {@link StackedTier}'s reads were served, and how its uploads to its backing tier are
 * doing.
 *
 * @param upperHits reads the upper tier served
 * @param backingHits reads the backing tier served
 * @param uploadsWaiting keys queued or being uploaded
 * @param uploaded blocks the backing tier stored
 * @param uploadsDropped blocks not uploaded: the queue was full, or the upper tier no longer held
 *     them when their turn came
 * @param uploadFailures uploads the backing tier refused or failed
 */
public record StackedStats(long upperHits, long backingHits, long uploadsWaiting, long uploaded, long uploadsDropped,
    long uploadFailures) {}
