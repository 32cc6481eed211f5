package dev.kvcache.tiered;

import dev.kvcache.Namespace;
import dev.kvcache.spi.NamespaceRemoval;
import dev.kvcache.spi.Tier;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * A stack's {@link NamespaceRemoval}: the upper tier's blocks of the namespace removed first, then,
 * once the blocks on their way down (spills, uploads) have arrived, the lower tier's; every tier's
 * salt destroyed before either.
 */
final class StackRemoval implements NamespaceRemoval {

  /** How long a removal waits for the blocks on their way down before it goes on. */
  static final Duration DRAIN = Duration.ofSeconds(30);

  /** Waits, up to {@link #DRAIN}, for the blocks on their way from the upper tier to the lower. */
  interface Drain {
    void await() throws InterruptedException;
  }

  private final NamespaceRemoval upper;
  private final Drain between;
  private final NamespaceRemoval lower;

  private StackRemoval(NamespaceRemoval upper, Drain between, NamespaceRemoval lower) {
    this.upper = upper;
    this.between = between;
    this.lower = lower;
  }

  /** The removal over {@code upper} and {@code lower}; empty if neither can remove a namespace. */
  static Optional<NamespaceRemoval> of(Tier upper, Drain between, Tier lower) {
    NamespaceRemoval u = upper.capability(NamespaceRemoval.class).orElse(null);
    NamespaceRemoval l = lower.capability(NamespaceRemoval.class).orElse(null);
    return u == null && l == null ? Optional.empty()
        : Optional.of(new StackRemoval(u, between, l));
  }

  @Override
  public boolean shredNamespace(Namespace namespace) {
    boolean above = upper != null && upper.shredNamespace(namespace);
    boolean below = lower != null && lower.shredNamespace(namespace);
    return above || below;
  }

  @Override
  public Map<String, Long> removeNamespace(Namespace namespace) {
    shredNamespace(namespace);
    Map<String, Long> removed = new LinkedHashMap<>();
    if (upper != null) {
      removed.putAll(upper.removeNamespace(namespace));
    }
    try {
      between.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (lower != null) {
      removed.putAll(lower.removeNamespace(namespace));
    }
    return removed;
  }
}
