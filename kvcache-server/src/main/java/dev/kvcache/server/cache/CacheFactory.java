package dev.kvcache.server.cache;

import dev.kvcache.spi.Tier;
import dev.kvcache.tiered.KvCacheConfig;
import io.micronaut.context.annotation.Bean;
import io.micronaut.context.annotation.Context;
import io.micronaut.context.annotation.Factory;
import jakarta.inject.Singleton;
import dev.kvcache.Namespace;
import dev.kvcache.server.access.Namespaces;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Opens the cache when the server starts and closes it (writing RAM to disk) when it stops. */
@Factory
public class CacheFactory {

  @Singleton
  KvCacheConfig cacheConfig(CacheSettings settings, List<QuotaSettings> quotas,
      Namespaces namespaces) {
    Map<Namespace, Long> ram = new LinkedHashMap<>();
    for (QuotaSettings q : quotas) {
      String prefix = "kvcache.quotas." + q.namespace() + ".";
      if (!namespaces.names().contains(q.namespace())) {
        throw new IllegalArgumentException(prefix + "*: '" + q.namespace() + "' is not one of"
            + " kvcache.namespaces " + namespaces.names());
      }
      if (!q.getRamBytes().isBlank()) {
        ram.put(namespaces.require(q.namespace()),
            SizeSetting.bytes(prefix + "ram-bytes", q.getRamBytes(), 4096));
      }
    }
    return settings.toConfig(ram);
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
