package dev.kvcache.server.cache;

import dev.kvcache.CacheHealth;
import dev.kvcache.KvCache;
import io.micronaut.core.async.publisher.Publishers;
import io.micronaut.health.HealthStatus;
import io.micronaut.management.health.indicator.HealthIndicator;
import io.micronaut.management.health.indicator.HealthResult;
import jakarta.inject.Singleton;
import java.util.Map;
import org.reactivestreams.Publisher;

/**
 * The cache's part of {@code /health}: {@code UP}, or {@code DEGRADED} with the problems, one line
 * each (a disk tier without room refusing PUTs, writes to disk failing). A degraded server still
 * serves what it holds, so the answer stays {@code 200}: an orchestrator that routes on the status
 * code keeps sending reads, while an operator or an alert reads the status.
 */
@Singleton
class CacheHealthIndicator implements HealthIndicator {

  /** Serving, with some promises on hold; operational, and ranked above UP so that it shows. */
  static final HealthStatus DEGRADED = new HealthStatus("DEGRADED",
      "serving what it holds; some promises are on hold", true, 500);

  private final KvCache cache;

  CacheHealthIndicator(KvCache cache) {
    this.cache = cache;
  }

  @Override
  public Publisher<HealthResult> getResult() {
    CacheHealth health = cache.health();
    HealthStatus status = health.degraded() ? DEGRADED : HealthStatus.UP;
    return Publishers.just(HealthResult.builder("cache", status)
        .details(Map.of("problems", health.problems()))
        .build());
  }
}
