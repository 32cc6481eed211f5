package dev.kvcache.server.s3;

import dev.kvcache.s3api.Operation;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Singleton;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The S3 API's requests by operation: {@code kvcache_s3_requests_seconds{operation}}, each timed
 * from its arrival to its answer (a GET's body is timed with the server's other reads, {@code
 * kvcache_get_body_seconds}), and {@code kvcache_s3_errors_total{operation}}, those answered with
 * an error. A request the API could not route counts under the operation {@code unknown}.
 */
@Singleton
@Requires(property = "kvcache.s3.enabled", notEquals = "false")
final class S3Meters implements MeterBinder {

  private static final String UNKNOWN = "unknown";

  private final Map<Operation, Timer> timers = new EnumMap<>(Operation.class);
  private final Map<Operation, Counter> errors = new EnumMap<>(Operation.class);
  private volatile Timer unknownTimer;
  private volatile Counter unknownErrors;

  @Override
  public void bindTo(MeterRegistry registry) {
    for (Operation op : Operation.values()) {
      timers.put(op, timer(registry, op.s3Name()));
      errors.put(op, errors(registry, op.s3Name()));
    }
    unknownTimer = timer(registry, UNKNOWN);
    unknownErrors = errors(registry, UNKNOWN);
  }

  /** Counts a request of {@code operation} (null: not routed) answered with {@code status}. */
  void record(Operation operation, long nanos, int status) {
    Timer t = operation == null ? unknownTimer : timers.get(operation);
    if (t == null) {
      return; // not bound to a registry
    }
    t.record(nanos, TimeUnit.NANOSECONDS);
    if (status >= 400) {
      (operation == null ? unknownErrors : errors.get(operation)).increment();
    }
  }

  private static Timer timer(MeterRegistry registry, String operation) {
    return Timer.builder("kvcache.s3.requests")
        .description("S3 API requests, from their arrival to their answer")
        .tag("operation", operation).register(registry);
  }

  private static Counter errors(MeterRegistry registry, String operation) {
    return Counter.builder("kvcache.s3.errors")
        .description("S3 API requests answered with an error")
        .tag("operation", operation).register(registry);
  }
}
