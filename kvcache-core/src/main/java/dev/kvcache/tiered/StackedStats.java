package dev.kvcache.tiered;

/**
 * Where a {@link StackedTier}'s reads were served, and how its uploads to its backing tier are
 * doing.
 *
 * @param upperHits reads the upper tier served
 * @param backingHits reads the backing tier served
 * @param uploadsWaiting keys queued, being uploaded, or waiting to be tried again
 * @param uploaded blocks the backing tier stored
 * @param uploadsDropped blocks not uploaded: the queue was full, the upper tier no longer held
 *     them when their turn came, or the backing tier refused or failed each of their tries
 * @param uploadFailures uploads the backing tier refused or failed, each try counted
 * @param uploadsRetried failed uploads queued to be tried again
 */
public record StackedStats(long upperHits, long backingHits, long uploadsWaiting, long uploaded, long uploadsDropped,
    long uploadFailures, long uploadsRetried) {}
