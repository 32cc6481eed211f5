package dev.kvcache.s3;

import dev.kvcache.s3.internal.DeleteQueue;
import dev.kvcache.s3.internal.Lister;
import dev.kvcache.s3.internal.ObjectIndex;
import dev.kvcache.s3.internal.ObjectNames;
import dev.kvcache.s3.internal.Requests;
import dev.kvcache.s3.internal.StoreState;
import dev.kvcache.spi.QuotaGauges;
import dev.kvcache.spi.TierVisitor;
import java.util.List;

/**
 * What an object tier reports of itself ({@link S3Tier#describe}, {@link S3Tier#s3Stats}): what
 * it asks of the store, the bytes each way, errors, time, damaged objects, whether deletes keep up,
 * its back-off, its place in the fleet, its quotas and its sealed objects that did not open.
 */
record S3Meters(String name, S3TierConfig config, Requests requests, ObjectUploads uploads,
    ObjectReads reads, ObjectSeals seals, DeleteQueue deletes, Lister lister, StoreState store,
    ObjectIndex index) {

  /** Reports the tier's meters, beside the reads and bytes every tier reports. */
  void describe(TierVisitor visitor) {
    QuotaGauges.describe(visitor, name, config.quotas(), ns -> index.ownedBytesOf(
        ns == null ? null : ObjectNames.folder(ns).id()));
    for (String op : List.of("GET", "PUT", "HEAD", "DELETE", "LIST")) {
      visitor.counter("kvcache.s3.requests", "requests sent to the object store, by operation"
          + " (DELETE: bulk deletes of up to 1000 objects)",
          () -> requests.sent().getOrDefault(op, 0L), "op", op);
      visitor.counter("kvcache.s3.request.errors", "requests that failed for the store's reason"
          + " (unreachable, timed out, throttled, 5xx), by operation",
          () -> requests.failed().getOrDefault(op, 0L), "op", op);
      visitor.counter("kvcache.s3.request.seconds", "time requests took, summed, by operation"
          + " (divide by kvcache_s3_requests for the mean)",
          () -> requests.seconds().getOrDefault(op, 0.0), "op", op);
    }
    if (seals != null) {
      visitor.counter("kvcache.seal.failures", "sealed blocks that did not open (their tag failed,"
          + " their namespace's salt or their master key is gone), read as misses and dropped",
          seals::failures, "tier", name);
    }
    visitor.counter("kvcache.s3.bytes", "block bytes moved", uploads::bytesUploaded,
        "direction", "up");
    visitor.counter("kvcache.s3.bytes", "block bytes moved", reads::bytesDownloaded,
        "direction", "down");
    visitor.counter("kvcache.s3.damaged.blocks", "objects whose bytes did not match their"
        + " checksum: refused and deleted", reads::damagedBlocks);
    visitor.counter("kvcache.s3.puts.not.stored", "uploads not stored because the store failed"
        + " or the tier was backing off", uploads::notStored);
    visitor.counter("kvcache.s3.objects.deleted", "objects deleted (evicted, deleted, damaged)",
        deletes::deleted);
    visitor.counter("kvcache.s3.listings", "complete listings of the bucket", lister::listings);
    visitor.counter("kvcache.s3.deletes.refused", "refusals of a delete by the store (an object"
        + " lock, a policy), each try counted", deletes::refused);
    visitor.counter("kvcache.s3.deletes.abandoned", "deletes given up after repeated refusals:"
        + " their objects stay in the bucket", deletes::abandoned);
    visitor.counter("kvcache.s3.pauses", "back-off pauses begun: one per burst of failures, one"
        + " per failed probe", store::pauses);
    visitor.gauge("kvcache.s3.paused", "1 while the tier backs off a failing store: its reads miss"
        + " and its puts are not stored", () -> store.paused() ? 1 : 0);
    visitor.gauge("kvcache.s3.delete.backlog", "objects waiting to be deleted: growing means"
        + " deletes fall behind evictions", deletes::backlog);
    visitor.gauge("kvcache.s3.last.listing.seconds", "how long the last complete listing of the"
        + " bucket took", lister::lastSeconds);
    visitor.gauge("kvcache.s3.last.listing.objects", "objects of the tier the last complete"
        + " listing found", lister::lastObjects);
    visitor.gauge("kvcache.s3.fleet.servers", "servers sharing the bucket as this one knows them;"
        + " 0 for a server alone", () -> index.fleet().members().size());
    visitor.gauge("kvcache.s3.fleet.member", "1 if this server is among the fleet's servers (or"
        + " alone); 0: it owns and evicts nothing, and the bucket is not held to its capacity",
        () -> index.fleet().member() ? 1 : 0);
    visitor.gauge("kvcache.s3.owned.objects", "objects this server owns and evicts",
        index::ownedSize);
    visitor.gauge("kvcache.s3.owned.bytes", "bytes of the objects this server owns, held to its"
        + " share of the capacity", index::ownedBytes);
  }

  /** What the tier has asked of the store, and how it fared. */
  S3Stats stats() {
    return new S3Stats(requests.sent(), requests.failed(), requests.seconds(),
        uploads.bytesUploaded(), reads.bytesDownloaded(), reads.damagedBlocks(),
        uploads.notStored(),
        deletes.deleted(), deletes.backlog(), deletes.refused(), deletes.abandoned(),
        store.pauses(), store.paused(), lister.listings(), lister.lastSeconds(),
        lister.lastObjects(), lister.lastHeldPeak(), index.fleet().members().size(),
        index.fleet().member(), index.ownedSize(), index.ownedBytes());
  }
}
