package dev.kvcache.server.cache;

import dev.kvcache.Namespace;
import java.util.Map;

/**
 * The RAM each namespace with a quota may fill at most, from {@code kvcache.quotas.<namespace>.*}
 * ({@link QuotaSettings}) once the namespaces are known.
 *
 * @param bytes the quotas, by namespace
 */
public record RamQuotas(Map<Namespace, Long> bytes) {

  public RamQuotas {
    bytes = Map.copyOf(bytes);
  }
}
