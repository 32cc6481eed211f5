package dev.kvcache.server;

import dev.kvcache.CacheStats;
import dev.kvcache.KvCache;
import dev.kvcache.tiered.StackedTier;
import dev.kvcache.tiered.TieredCache;
import dev.kvcache.tiered.TieredStats;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import jakarta.inject.Singleton;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;

/** The cache's counters as Prometheus metrics ({@code kvcache_*} on {@code /prometheus}). */
@Singleton
class CacheMeters implements MeterBinder {

  private final KvCache cache;

  CacheMeters(KvCache cache) {
    this.cache = cache;
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    counter(registry, "kvcache.hits", "reads that found their block", CacheStats::hits);
    counter(registry, "kvcache.misses", "reads that found nothing", CacheStats::misses);
    counter(registry, "kvcache.puts", "blocks written", CacheStats::puts);
    counter(registry, "kvcache.evictions", "blocks evicted to make room", CacheStats::evictions);
    counter(registry, "kvcache.rejections", "puts refused", CacheStats::rejections);
    counter(registry, "kvcache.deletes", "blocks deleted", CacheStats::deletes);
    gauge(registry, "kvcache.blocks", "blocks findable", CacheStats::blocks);
    gauge(registry, "kvcache.bytes.used", "bytes in use, all tiers together (per tier: "
        + "kvcache_tier_bytes_used)", CacheStats::bytesUsed);
    gauge(registry, "kvcache.bytes.capacity", "bytes the tiers may hold together (per tier: "
        + "kvcache_tier_bytes_capacity)", CacheStats::capacityBytes);
    gauge(registry, "kvcache.leases.open", "reads holding a block", CacheStats::leasesOpen);
    Gauge.builder("kvcache.degraded", cache, c -> c.health().degraded() ? 1 : 0)
        .description("1 while some promise of the cache is on hold (see /health), else 0")
        .register(registry);
    if (cache instanceof TieredCache tiered) {
      tierHits(registry, tiered, "ram", t -> t.tieredStats().ramHits());
      tierHits(registry, tiered, "spill", t -> t.tieredStats().spillHits());
      tierBytes(registry, tiered, "ram", TieredCache::ramStats);
      if (tiered.lower() instanceof StackedTier stacked) {
        tierHits(registry, stacked, stacked.upper().name(), t -> t.stackedStats().upperHits());
        tierHits(registry, stacked, stacked.backing().name(),
            t -> t.stackedStats().backingHits());
        tierBytes(registry, stacked, stacked.upper().name(), StackedTier::upperStats);
        tierBytes(registry, stacked, stacked.backing().name(), StackedTier::backingStats);
      } else {
        tierHits(registry, tiered, "disk", t -> t.tieredStats().lowerHits());
        tierBytes(registry, tiered, "disk", TieredCache::lowerStats);
      }
      tieredCounter(registry, tiered, "kvcache.lower.write.failures",
          "writes to the disk tier (spills, and copies written behind or through) refused for lack"
              + " of room or failed", TieredStats::writeFailures);
      tieredCounter(registry, tiered, "kvcache.spill.drops",
          "blocks RAM evicted that reached no tier", TieredStats::spillDrops);
      tieredCounter(registry, tiered, "kvcache.lower.copies",
          "blocks written to the disk tier as they were put (written behind or through)",
          TieredStats::copies);
      tieredCounter(registry, tiered, "kvcache.puts.not.durable",
          "PUTs refused (507 not-durable): writes to the disk tier failed and the write-behind"
              + " window was full of blocks only RAM holds", TieredStats::notDurablePuts);
      Gauge.builder("kvcache.lower.failed.copies", tiered, t -> t.tieredStats().failedCopies())
          .description("blocks written behind whose write to the disk tier failed, held by RAM"
              + " alone")
          .register(registry);
    } else {
      tierHits(registry, cache, "ram", c -> c.stats().hits());
      tierBytes(registry, cache, "ram", KvCache::stats);
    }
  }

  private static <C> void tierHits(MeterRegistry registry, C cache, String tier,
      ToDoubleFunction<C> hits) {
    FunctionCounter.builder("kvcache.tier.hits", cache, hits)
        .description("reads served by each tier: ram, spill (a block on its way from RAM to disk),"
            + " disk, s3")
        .tag("tier", tier).register(registry);
  }

  private static <C> void tierBytes(MeterRegistry registry, C cache, String tier,
      Function<C, CacheStats> stats) {
    Gauge.builder("kvcache.tier.bytes.used", cache, c -> stats.apply(c).bytesUsed())
        .description("bytes a tier holds (blocks and the memory reserved for writes under way)")
        .tag("tier", tier).register(registry);
    Gauge.builder("kvcache.tier.bytes.capacity", cache, c -> stats.apply(c).capacityBytes())
        .description("bytes a tier may hold").tag("tier", tier).register(registry);
  }

  private static void tieredCounter(MeterRegistry registry, TieredCache tiered, String name,
      String help, ToDoubleFunction<TieredStats> value) {
    FunctionCounter.builder(name, tiered, t -> value.applyAsDouble(t.tieredStats()))
        .description(help)
        .register(registry);
  }

  private void counter(MeterRegistry registry, String name, String help,
      ToDoubleFunction<CacheStats> value) {
    FunctionCounter.builder(name, cache, c -> value.applyAsDouble(c.stats()))
        .description(help)
        .register(registry);
  }

  private void gauge(MeterRegistry registry, String name, String help,
      ToDoubleFunction<CacheStats> value) {
    Gauge.builder(name, cache, c -> value.applyAsDouble(c.stats())).description(help).register(registry);
  }
}
