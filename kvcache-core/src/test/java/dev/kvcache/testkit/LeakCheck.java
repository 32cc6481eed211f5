package dev.kvcache.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.CacheStats;
import dev.kvcache.KvCache;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Checks after every test that the caches it created leaked nothing: no lease left open, and once
 * closed, no memory still allocated (or another check given to the constructor). Register it with {@code @RegisterExtension} and pass every
 * cache a test builds through {@link #track}.
 */
public final class LeakCheck implements AfterEachCallback {

  private final List<KvCache> tracked = new ArrayList<>();
  private final Consumer<CacheStats> afterClose;

  /** Checks that a closed cache holds no memory. */
  public LeakCheck() {
    this(stats -> assertThat(stats.bytesUsed()).as("bytes still allocated after close").isZero());
  }

  /** Runs {@code afterClose} on each closed cache's statistics instead of the memory check. */
  public LeakCheck(Consumer<CacheStats> afterClose) {
    this.afterClose = afterClose;
  }

  /** Returns {@code cache}, to be checked (and closed) after the current test. */
  public synchronized <T extends KvCache> T track(T cache) {
    tracked.add(cache);
    return cache;
  }

  @Override
  public synchronized void afterEach(ExtensionContext context) {
    try {
      for (KvCache cache : tracked) {
        assertThat(cache.stats().leasesOpen()).as("leases left open by the test").isZero();
        cache.close();
        afterClose.accept(cache.stats());
      }
    } finally {
      tracked.clear();
    }
  }
}
