package dev.kvcache.server;

import dev.kvcache.Namespace;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.server.access.Namespaces;
import dev.kvcache.server.cache.QuotaSettings;
import dev.kvcache.server.cache.NamespaceQuotas;
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
   * The RAM, disk and object tier quotas.
   *
   * @throws IllegalArgumentException naming the setting, for a namespace not served or a size
   *     that is malformed or too small (a RAM quota below 4 KiB, a disk or object quota not
   *     positive: the disk tier checks it holds 4 super-blocks)
   */
  @Singleton
  NamespaceQuotas quotas(List<QuotaSettings> quotas, Namespaces namespaces) {
    Map<Namespace, Long> ram = new LinkedHashMap<>();
    Map<Namespace, Long> disk = new LinkedHashMap<>();
    Map<Namespace, Long> objects = new LinkedHashMap<>();
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
      if (!q.getDiskBytes().isBlank()) {
        disk.put(namespaces.require(q.namespace()),
            SizeSetting.bytes(prefix + "disk-bytes", q.getDiskBytes(), 1));
      }
      if (!q.getObjectBytes().isBlank()) {
        objects.put(namespaces.require(q.namespace()),
            SizeSetting.bytes(prefix + "object-bytes", q.getObjectBytes(), 1));
      }
    }
    return new NamespaceQuotas(ram, disk, objects);
  }
}
