package dev.kvcache.server;

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

  private final Map<LeaseCopies.Outcome, LongAdder> counts =
      new EnumMap<>(LeaseCopies.Outcome.class);

  CopyOutcomes() {
    for (LeaseCopies.Outcome o : LeaseCopies.Outcome.values()) {
      counts.put(o, new LongAdder());
    }
  }

  void add(LeaseCopies.Outcome outcome) {
    counts.get(outcome).increment();
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    for (LeaseCopies.Outcome o : LeaseCopies.Outcome.values()) {
      FunctionCounter.builder("kvcache.copied.into.files", counts.get(o), LongAdder::sum)
          .tag("outcome", o.name())
          .description("pinned blocks a client on this host had the server write into a file "
              + "of its own, by what became of them")
          .register(registry);
    }
  }
}
