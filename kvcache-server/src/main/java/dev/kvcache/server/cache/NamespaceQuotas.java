package dev.kvcache.server.cache;

import dev.kvcache.Namespace;
import java.util.Map;

/**
 * The bytes each namespace with a quota may fill at most, from {@code kvcache.quotas.<namespace>.*}
 * ({@link QuotaSettings}) once the namespaces are known.
 *
 * @param ram the RAM quotas, by namespace
 * @param disk the disk quotas, by namespace
 * @param objects the object tier's quotas (bytes of the bucket), by namespace
 */
public record NamespaceQuotas(Map<Namespace, Long> ram, Map<Namespace, Long> disk,
    Map<Namespace, Long> objects) {

  /** No quotas. */
  public static final NamespaceQuotas NONE = new NamespaceQuotas(Map.of(), Map.of(), Map.of());

  public NamespaceQuotas {
    ram = Map.copyOf(ram);
    disk = Map.copyOf(disk);
    objects = Map.copyOf(objects);
  }
}
