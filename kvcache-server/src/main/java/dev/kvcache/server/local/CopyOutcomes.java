package dev.kvcache.server.local;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import jakarta.inject.Singleton;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * Pinned blocks written into clients' files ({@link LeaseCopies}), by outcome:
 * {@code kvcache_copied_into_files_total{outcome}}.
 */
@Singleton
class CopyOutcomes implements MeterBinder {

  private final Map<CopyOutcome, LongAdder> counts =
      new EnumMap<>(CopyOutcome.class);

  CopyOutcomes() {
    for (CopyOutcome o : CopyOutcome.values()) {
      counts.put(o, new LongAdder());
    }
  }

  void add(CopyOutcome outcome) {
    counts.get(outcome).increment();
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    for (CopyOutcome o : CopyOutcome.values()) {
      FunctionCounter.builder("kvcache.copied.into.files", counts.get(o), LongAdder::sum)
          .tag("outcome", o.name())
          .description("pinned blocks a client on this host had the server write into a file "
              + "of its own, by what became of them")
          .register(registry);
    }
  }
}
