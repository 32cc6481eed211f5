package dev.kvcache.spi;

import dev.kvcache.Namespace;
import java.util.Map;
import java.util.function.ToLongFunction;

/**
 * The gauges every tier with quotas per namespace reports, so that they read alike across tiers:
 * {@code kvcache.quota.bytes} (a quota) and {@code kvcache.quota.used.bytes} (what counts against
 * it), tagged {@code tier} and {@code namespace}. A namespace is named by its tenant, or by its
 * model, dtype and layout if it has none; the namespaces without a quota are reported together as
 * {@code namespace=*}, so that the labels stay as few as the quotas configured.
 */
public final class QuotaGauges {

  private static final String USED_HELP = "the bytes of a namespace's blocks, and of"
      + " those of the namespaces without a quota together (namespace=*)";

  private QuotaGauges() {}

  /**
   * Reports {@code quotas} of tier {@code tier} to {@code visitor}, with {@code used} giving the
   * bytes that count against a namespace's quota (called with null for the namespaces without
   * one). Nothing without quotas.
   */
  public static void describe(TierVisitor visitor, String tier, Map<Namespace, Long> quotas,
      ToLongFunction<Namespace> used) {
    if (quotas.isEmpty()) {
      return;
    }
    quotas.forEach((ns, quota) -> {
      String label = label(ns);
      visitor.gauge("kvcache.quota.bytes", "the bytes a namespace's blocks may hold at most",
          () -> quota, "tier", tier, "namespace", label);
      visitor.gauge("kvcache.quota.used.bytes", USED_HELP, () -> used.applyAsLong(ns),
          "tier", tier, "namespace", label);
    });
    visitor.gauge("kvcache.quota.used.bytes", USED_HELP, () -> used.applyAsLong(null),
        "tier", tier, "namespace", "*");
  }

  /** How a namespace is named in the gauges: its tenant, or its model, dtype and layout. */
  public static String label(Namespace ns) {
    return ns.tenant().isEmpty() ? ns.model() + "/" + ns.dtype() + "/" + ns.layout()
        : ns.tenant();
  }
}
