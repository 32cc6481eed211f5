package dev.kvcache.server.api;

import dev.kvcache.BlockLease;
import dev.kvcache.server.access.NamespaceSettings;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micronaut.context.annotation.Context;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * The blocks the server sent back, per namespace, and the prefill tokens they saved their engines:
 * {@code kvcache_blocks_served_total{namespace}} for every namespace, and {@code
 * kvcache_prefill_tokens_avoided_total{namespace}} (blocks served times the namespace's tokens per
 * block) for the namespaces {@code kvcache.tokens-per-block} gives a size, as {@code
 * name=tokens} entries. A block counts once per GET, batch GET or pinned read that sent it. Also
 * times the bodies of GETs, batch GETs and pinned reads of blocks held in this process until they
 * are sent: {@code kvcache_get_body_seconds{request}}.
 */
@Context // built at the start, so that a malformed kvcache.tokens-per-block stops it
public class ServedBlocks implements MeterBinder {

  /** A namespace's count of blocks sent, and its tokens per block (0: not configured). */
  private record Served(String namespace, LongAdder blocks, int tokensPerBlock) {}

  private final Map<String, Served> byNamespace = new HashMap<>();
  private volatile Timer getBodies; // null until the registry binds this
  private volatile Timer batchBodies;
  private volatile Timer pinnedBodies;

  ServedBlocks(NamespaceSettings settings) {
    Map<String, Integer> tokensPerBlock = tokensPerBlock(settings);
    for (String namespace : settings.getNamespaces()) {
      byNamespace.put(namespace,
          new Served(namespace, new LongAdder(), tokensPerBlock.getOrDefault(namespace, 0)));
    }
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    getBodies = bodyTimer(registry, "get");
    batchBodies = bodyTimer(registry, "batch-get");
    pinnedBodies = bodyTimer(registry, "pinned");
    for (Served s : byNamespace.values()) {
      FunctionCounter.builder("kvcache.blocks.served", s.blocks(), LongAdder::sum)
          .description("blocks sent to clients (GETs, batch GETs and pinned reads that hit)")
          .tag("namespace", s.namespace())
          .register(registry);
      if (s.tokensPerBlock() > 0) {
        FunctionCounter.builder("kvcache.prefill.tokens.avoided", s,
                x -> (double) x.blocks().sum() * x.tokensPerBlock())
            .description("prompt tokens whose prefill the blocks served saved: blocks served"
                + " times the namespace's kvcache.tokens-per-block")
            .tag("namespace", s.namespace())
            .register(registry);
      }
    }
  }

  /**
   * The {@code kvcache.tokens-per-block} entries by namespace.
   *
   * @throws IllegalArgumentException for an entry that is not {@code name=tokens} with a served
   *     namespace and a positive count, or a namespace given twice
   */
  private static Map<String, Integer> tokensPerBlock(NamespaceSettings settings) {
    Map<String, Integer> result = new HashMap<>();
    for (String entry : settings.getTokensPerBlock()) {
      int eq = entry.lastIndexOf('=');
      String name = eq < 0 ? entry : entry.substring(0, eq).trim();
      int tokens;
      try {
        tokens = eq < 0 ? 0 : Integer.parseInt(entry.substring(eq + 1).trim());
      } catch (NumberFormatException e) {
        tokens = 0;
      }
      if (tokens <= 0) {
        throw new IllegalArgumentException("kvcache.tokens-per-block: '" + entry
            + "' is not namespace=tokens with a positive number of tokens, such as default=512");
      }
      if (!settings.getNamespaces().contains(name)) {
        throw new IllegalArgumentException("kvcache.tokens-per-block: '" + name
            + "' is not one of kvcache.namespaces " + settings.getNamespaces());
      }
      if (result.put(name, tokens) != null) {
        throw new IllegalArgumentException("kvcache.tokens-per-block: '" + name
            + "' is given twice");
      }
    }
    return result;
  }

  private static Timer bodyTimer(MeterRegistry registry, String request) {
    return Timer.builder("kvcache.get.body")
        .description("time from a read finding its blocks to Netty releasing the body, after its"
            + " last byte went to the socket (or its stream was reset): the server's part of a GET,"
            + " batch GET or pinned read, the body included")
        .tag("request", request)
        .publishPercentiles(0.5, 0.95, 0.99)
        .register(registry);
  }

  /** A body of one block for a GET, timed; counts the block as served in {@code namespace}. */
  public LeaseBody getBody(String namespace, BlockLease lease) {
    served(namespace, 1);
    return new LeaseBody(lease, getBodies);
  }

  /** A body of one pinned block, timed; counts it as served in {@code namespace}. */
  LeaseBody pinnedBody(String namespace, BlockLease lease) {
    served(namespace, 1);
    return new LeaseBody(lease, pinnedBodies);
  }

  /** A body of the blocks of a batch GET, timed; counts them as served in {@code namespace}. */
  LeaseBody batchBody(String namespace, List<BlockLease> leases) {
    served(namespace, leases.size());
    return new LeaseBody(leases, batchBodies);
  }

  /** Counts {@code blocks} blocks of {@code namespace} sent; an unknown namespace counts none. */
  public void served(String namespace, int blocks) {
    Served s = byNamespace.get(namespace);
    if (s != null && blocks > 0) {
      s.blocks().add(blocks);
    }
  }
}
