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
 * @param listings complete listings of the bucket
 * @param lastListingSeconds how long the last complete listing took
 * @param lastListingObjects how many of the tier's objects the last complete listing found
 * @param fleetServers the servers sharing the bucket as this one knows them; 0 for a server alone
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
    long listings,
    double lastListingSeconds,
    long lastListingObjects,
    int fleetServers,
    long ownedObjects,
    long ownedBytes) {

  public S3Stats {
    requests = Map.copyOf(requests);
    errors = Map.copyOf(errors);
    requestSeconds = Map.copyOf(requestSeconds);
  }
}
