package dev.kvcache.disk;

/**
 * Counters of a {@link DiskTier} beyond the common {@link dev.kvcache.CacheStats}.
 *
 * @param corruptBlocks blocks dropped because their record failed its checksum when read
 * @param unchangedPuts puts of exactly the bytes already stored under the key, not written again
 * @param bytesWritten bytes the tier wrote: records (headers and payloads) and journal entries
 * @param superBlocks super-block files in use
 * @param superBlocksDropped super-block files dropped to make room
 * @param writeFailures puts whose bytes or journal entry could not be written (the file system
 *     full, an I/O error); each answered {@link dev.kvcache.PutStatus#REJECTED_NO_SPACE}
 * @param syncs syncs completed ({@link DiskTier#sync}, and the periodic ones of {@link
 *     SyncPolicy#PERIODIC}): everything stored before one started survives a power loss
 * @param scrubbedBytes bytes of records the background scrub checked against their checksums
 * @param scrubDamaged damaged blocks the scrub found, and dropped (also in {@code corruptBlocks})
 * @param scrubPasses passes of the scrub over every super-block completed
 * @param directReadBytes bytes of blocks read past the page cache ({@link
 *     DiskTierConfig#directReads()}): the reads of blocks that were not in it
 */
public record DiskStats(
    long corruptBlocks, long unchangedPuts, long bytesWritten, long superBlocks,
    long superBlocksDropped, long writeFailures, long syncs, long scrubbedBytes,
    long scrubDamaged, long scrubPasses, long directReadBytes) {}
