package dev.kvcache.server;

import dev.kvcache.Namespace;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.server.access.Namespaces;
import dev.kvcache.server.cache.QuotaSettings;
import dev.kvcache.server.cache.RamQuotas;
import dev.kvcache.server.cache.SizeSetting;
import io.micronaut.context.annotation.Factory;
import jakarta.inject.Singleton;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The namespaces' quotas ({@code kvcache.quotas.<namespace>.*}), checked against the namespaces
 * served: here, where both the cache's settings and the namespaces are known.
 */
@Factory
class Quotas {

  /**
   * The RAM quotas.
   *
   * @throws IllegalArgumentException naming the setting, for a namespace not served or a size
   *     that is malformed or below 4 KiB
   */
  @Singleton
  RamQuotas ramQuotas(List<QuotaSettings> quotas, Namespaces namespaces) {
    Map<Namespace, Long> ram = new LinkedHashMap<>();
    for (QuotaSettings q : quotas) {
      String prefix = "kvcache.quotas." + q.namespace() + ".";
      if (!namespaces.names().contains(q.namespace())) {
        throw new IllegalArgumentException(prefix + "*: '" + q.namespace() + "' is not one of"
            + " kvcache.namespaces " + namespaces.names());
      }
      if (!q.getRamBytes().isBlank()) {
        ram.put(namespaces.require(q.namespace()),
            SizeSetting.bytes(prefix + "ram-bytes", q.getRamBytes(),
                RamTierConfig.MIN_QUOTA_BYTES));
      }
    }
    return new RamQuotas(ram);
  }
}
