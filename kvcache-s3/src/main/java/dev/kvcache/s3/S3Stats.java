package dev.kvcache.s3;

import java.util.Map;

/**
 * What an {@link S3Tier} has asked of its object store, beside its {@link dev.kvcache.CacheStats}:
 * the requests it sent by operation (what a store bills for), the bytes each way, and how it fared.
 *
 * @param requests requests sent, by operation: {@code GET}, {@code PUT}, {@code HEAD}, {@code
 *     DELETE} (bulk deletes, up to 1000 objects each), {@code LIST}
 * @param errors requests that failed for the store's reason (unreachable, timed out, throttled,
 *     failing), by operation; a missing object is no error
 * @param requestSeconds the time requests took, by operation, summed
 * @param bytesUploaded block bytes stored
 * @param bytesDownloaded block bytes read and checked
 * @param damagedBlocks objects whose bytes did not match their checksum: refused, and deleted
 * @param notStored puts not stored because the store failed or was backing off
 * @param objectsDeleted objects deleted (evicted, deleted, damaged)
 * @param deleteBacklog objects waiting to be deleted: a backlog that grows means deletes fall
 *     behind evictions
 * @param deletesRefused refusals of a delete by the store (an object lock, a policy), each try
 *     counted
 * @param deletesAbandoned deletes given up after repeated refusals: their objects stay in the
 *     bucket
 * @param pauses back-off pauses begun: one per burst of failures, one per failed probe
 * @param paused whether the tier is backing off now (its reads miss, its puts are not stored)
 * @param listings complete listings of the bucket
 * @param lastListingSeconds how long the last complete listing took
 * @param lastListingObjects how many of the tier's objects the last complete listing found
 * @param listingHeldPeak the most objects the last complete listing held in memory at once:
 *     at most the presence index's size
 * @param fleetServers the servers sharing the bucket as this one knows them; 0 for a server alone
 * @param fleetMember whether this server is one of them (always, for a server alone): one that
 *     is not owns and evicts nothing
 * @param ownedObjects objects this server owns and evicts (in a fleet, its part of the bucket)
 * @param ownedBytes their bytes, held to this server's share of the capacity
 */
public record S3Stats(
    Map<String, Long> requests,
    Map<String, Long> errors,
    Map<String, Double> requestSeconds,
    long bytesUploaded,
    long bytesDownloaded,
    long damagedBlocks,
    long notStored,
    long objectsDeleted,
    long deleteBacklog,
    long deletesRefused,
    long deletesAbandoned,
    long pauses,
    boolean paused,
    long listings,
    double lastListingSeconds,
    long lastListingObjects,
    long listingHeldPeak,
    int fleetServers,
    boolean fleetMember,
    long ownedObjects,
    long ownedBytes) {

  public S3Stats {
    requests = Map.copyOf(requests);
    errors = Map.copyOf(errors);
    requestSeconds = Map.copyOf(requestSeconds);
  }
}
