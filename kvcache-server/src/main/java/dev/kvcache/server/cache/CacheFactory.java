package dev.kvcache.server.cache;

import dev.kvcache.spi.Tier;
import dev.kvcache.tiered.KvCacheConfig;
import io.micronaut.context.annotation.Bean;
import io.micronaut.context.annotation.Context;
import io.micronaut.context.annotation.Factory;
import jakarta.inject.Singleton;
import java.io.IOException;
import java.io.UncheckedIOException;

/** Opens the cache when the server starts and closes it (writing RAM to disk) when it stops. */
@Factory
public class CacheFactory {

  @Singleton
  KvCacheConfig cacheConfig(CacheSettings settings, NamespaceQuotas quotas,
      SealedNamespaces sealed) {
    return settings.toConfig(quotas, sealed);
  }

  /** Opened with the server, not on first use, so a bad setting stops the start. */
  @Context
  @Bean(preDestroy = "close")
  Tier cache(KvCacheConfig config) {
    try {
      return config.open();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open the cache's storage: " + e.getMessage(), e);
    }
  }
}
