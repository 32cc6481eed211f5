package dev.kvcache.server;

import dev.kvcache.KvCache;
import dev.kvcache.s3.S3Stats;
import dev.kvcache.s3.S3Tier;
import dev.kvcache.tiered.StackedStats;
import dev.kvcache.tiered.StackedTier;
import dev.kvcache.tiered.TieredCache;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import jakarta.inject.Singleton;
import java.util.List;
import java.util.function.ToDoubleFunction;

/**
 * The object tier's requests and uploads as Prometheus metrics ({@code kvcache_s3_*}), when the
 * cache has one: what the store bills for (requests by operation), the bytes each way, errors,
 * time, damaged objects, and whether deletes and uploads keep up.
 */
@Singleton
class ObjectStoreMeters implements MeterBinder {

  private static final List<String> OPERATIONS = List.of("GET", "PUT", "HEAD", "DELETE", "LIST");

  private final KvCache cache;

  ObjectStoreMeters(KvCache cache) {
    this.cache = cache;
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    if (!(cache instanceof TieredCache tiered)) {
      return;
    }
    ObjectTierController.objectTier(cache).ifPresent(s3 -> bindObjectTier(registry, s3));
    if (tiered.lower() instanceof StackedTier stacked) {
      bindUploads(registry, stacked);
    }
  }

  private static void bindObjectTier(MeterRegistry registry, S3Tier s3) {
    for (String op : OPERATIONS) {
      FunctionCounter.builder("kvcache.s3.requests", s3,
              t -> t.s3Stats().requests().getOrDefault(op, 0L))
          .description("requests sent to the object store, by operation (DELETE: bulk deletes of"
              + " up to 1000 objects)")
          .tag("op", op).register(registry);
      FunctionCounter.builder("kvcache.s3.request.errors", s3,
              t -> t.s3Stats().errors().getOrDefault(op, 0L))
          .description("requests that failed for the store's reason (unreachable, timed out,"
              + " throttled, 5xx), by operation")
          .tag("op", op).register(registry);
      FunctionCounter.builder("kvcache.s3.request.seconds", s3,
              t -> t.s3Stats().requestSeconds().getOrDefault(op, 0.0))
          .description("time requests took, summed, by operation (divide by kvcache_s3_requests"
              + " for the mean)")
          .tag("op", op).register(registry);
    }
    counter(registry, s3, "kvcache.s3.bytes", "block bytes moved", "direction", "up",
        S3Stats::bytesUploaded);
    counter(registry, s3, "kvcache.s3.bytes", "block bytes moved", "direction", "down",
        S3Stats::bytesDownloaded);
    counter(registry, s3, "kvcache.s3.damaged.blocks",
        "objects whose bytes did not match their checksum: refused and deleted", null, null,
        S3Stats::damagedBlocks);
    counter(registry, s3, "kvcache.s3.puts.not.stored",
        "uploads not stored because the store failed or the tier was backing off", null, null,
        S3Stats::notStored);
    counter(registry, s3, "kvcache.s3.objects.deleted",
        "objects deleted (evicted, deleted, damaged)", null, null, S3Stats::objectsDeleted);
    counter(registry, s3, "kvcache.s3.listings", "complete listings of the bucket", null, null,
        S3Stats::listings);
    counter(registry, s3, "kvcache.s3.deletes.refused",
        "refusals of a delete by the store (an object lock, a policy), each try counted", null,
        null, S3Stats::deletesRefused);
    counter(registry, s3, "kvcache.s3.deletes.abandoned",
        "deletes given up after repeated refusals: their objects stay in the bucket", null, null,
        S3Stats::deletesAbandoned);
    counter(registry, s3, "kvcache.s3.pauses",
        "back-off pauses begun: one per burst of failures, one per failed probe", null, null,
        S3Stats::pauses);
    Gauge.builder("kvcache.s3.paused", s3, t -> t.s3Stats().paused() ? 1 : 0)
        .description("1 while the tier backs off a failing store: its reads miss and its puts are"
            + " not stored")
        .register(registry);
    Gauge.builder("kvcache.s3.delete.backlog", s3, t -> t.s3Stats().deleteBacklog())
        .description("objects waiting to be deleted: growing means deletes fall behind evictions")
        .register(registry);
    Gauge.builder("kvcache.s3.last.listing.seconds", s3, t -> t.s3Stats().lastListingSeconds())
        .description("how long the last complete listing of the bucket took")
        .register(registry);
    Gauge.builder("kvcache.s3.last.listing.objects", s3, t -> t.s3Stats().lastListingObjects())
        .description("objects of the tier the last complete listing found")
        .register(registry);
    Gauge.builder("kvcache.s3.fleet.servers", s3, t -> t.s3Stats().fleetServers())
        .description("servers sharing the bucket as this one knows them; 0 for a server alone")
        .register(registry);
    Gauge.builder("kvcache.s3.fleet.member", s3, t -> t.s3Stats().fleetMember() ? 1 : 0)
        .description("1 if this server is among the fleet's servers (or alone); 0: it owns and"
            + " evicts nothing, and the bucket is not held to its capacity")
        .register(registry);
    Gauge.builder("kvcache.s3.owned.objects", s3, t -> t.s3Stats().ownedObjects())
        .description("objects this server owns and evicts")
        .register(registry);
    Gauge.builder("kvcache.s3.owned.bytes", s3, t -> t.s3Stats().ownedBytes())
        .description("bytes of the objects this server owns, held to its share of the capacity")
        .register(registry);
  }

  private static void bindUploads(MeterRegistry registry, StackedTier stacked) {
    String to = stacked.backing().name();
    FunctionCounter.builder("kvcache.uploads", stacked, t -> t.stackedStats().uploaded())
        .description("blocks uploaded from the disk tier to the tier below it")
        .tag("to", to).register(registry);
    FunctionCounter.builder("kvcache.uploads.dropped", stacked,
            t -> t.stackedStats().uploadsDropped())
        .description("blocks not uploaded: the upload queue was full, or the disk tier no longer"
            + " held them when their turn came")
        .tag("to", to).register(registry);
    FunctionCounter.builder("kvcache.uploads.failed", stacked,
            t -> t.stackedStats().uploadFailures())
        .description("uploads the tier below refused or failed")
        .tag("to", to).register(registry);
    Gauge.builder("kvcache.uploads.waiting", stacked, t -> t.stackedStats().uploadsWaiting())
        .description("blocks queued for upload or being uploaded")
        .tag("to", to).register(registry);
  }

  private static void counter(MeterRegistry registry, S3Tier s3, String name, String help,
      String tag, String value, ToDoubleFunction<S3Stats> stat) {
    FunctionCounter.Builder<S3Tier> b = FunctionCounter.builder(name, s3,
        t -> stat.applyAsDouble(t.s3Stats())).description(help);
    if (tag != null) {
      b.tag(tag, value);
    }
    b.register(registry);
  }
}
