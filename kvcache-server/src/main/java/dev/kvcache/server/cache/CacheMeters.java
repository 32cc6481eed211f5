package dev.kvcache.server.cache;

import dev.kvcache.CacheStats;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierVisitor;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import jakarta.inject.Singleton;
import java.util.ArrayList;
import java.util.List;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;
import java.util.function.ToDoubleFunction;

/**
 * The cache's counters as Prometheus metrics ({@code kvcache_*} on {@code /prometheus}): the whole
 * cache's, and what each tier of its stack reports of itself ({@link Tier#describe}), so that a
 * disk tier adds its scrub and an object tier its requests without this class knowing either.
 */
@Singleton
class CacheMeters implements MeterBinder {

  private final Tier cache;
  /**
   * The tiers' suppliers, held here as long as this binder: a registry holds the object a meter
   * reads only weakly, and must, since it may outlive the server (a global registry) and a tier's
   * memory is freed only once nothing reaches it.
   */
  private final List<Object> suppliers = new ArrayList<>();

  CacheMeters(Tier cache) {
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
    cache.describe(new Registering(registry), () -> cache.stats().hits());
  }

  /** Registers what the tiers report as meters of {@code registry}. */
  private final class Registering implements TierVisitor {
    private final MeterRegistry registry;

    Registering(MeterRegistry registry) {
      this.registry = registry;
    }

    @Override
    public void hits(String tier, LongSupplier reads) {
      counter("kvcache.tier.hits", "reads served by each tier: ram, spill (a block on its way from"
          + " RAM to the tier below), disk, s3, remote", reads::getAsLong, "tier", tier);
    }

    @Override
    public void bytes(String tier, LongSupplier used, LongSupplier capacity) {
      gauge("kvcache.tier.bytes.used", "bytes a tier holds (blocks and the memory reserved for"
          + " writes under way)", used::getAsLong, "tier", tier);
      gauge("kvcache.tier.bytes.capacity", "bytes a tier may hold", capacity::getAsLong,
          "tier", tier);
    }

    @Override
    public void counter(String name, String help, DoubleSupplier value, String... tags) {
      suppliers.add(value);
      FunctionCounter.builder(name, value, DoubleSupplier::getAsDouble).description(help)
          .baseUnit(unit(name)).tags(Tags.of(tags)).register(registry);
    }

    @Override
    public void gauge(String name, String help, DoubleSupplier value, String... tags) {
      suppliers.add(value);
      Gauge.builder(name, value, DoubleSupplier::getAsDouble)
          .description(help).baseUnit(unit(name)).tags(Tags.of(tags)).register(registry);
    }

    /** The unit a name ends in, if any. */
    private static String unit(String name) {
      return name.endsWith(".bytes") ? "bytes" : name.endsWith(".seconds") ? "seconds" : null;
    }
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
