package dev.kvcache.server.events;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockWriter;
import dev.kvcache.Namespace;
import dev.kvcache.PutStatus;
import dev.kvcache.spi.ForwardingBlockWriter;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Function;

/**
 * The engine blocks the cache holds, by storage key, with the tiers that hold each: what a KV
 * event names a block by when a tier stores or drops it. A PUT that names its engine block ({@link
 * EngineBlock#fromHeaders}) has its writer {@link #tag}ged, which notes the block while it
 * commits; a block no tier holds any more is forgotten a little later (it may be on its way to
 * another tier).
 *
 * <p>Kept in the heap, about 300 bytes and 4 per token for each block. A tier that keeps tags (the
 * disk) keeps each block's name with it ({@link #tagOf}), and tells it again when the server
 * starts ({@link #restore}); blocks in a tier that keeps none (the bucket) are held unnamed after a
 * restart, and their events are not told.
 */
public final class EngineBlocks {

  /**
   * A block, the tiers that hold it (a bit each, {@link KvEventFeed}) and the commits of it under
   * way, during which it is kept though no tier holds it (a put first drops the key's older copy).
   */
  private record Held(EngineBlock block, long namespace, int tiers, int commits) {}

  /** A block that left its last tier, and when: forgotten once {@link #GRACE_NANOS} passed. */
  private record Left(BlockKey key, long nanos) {}

  /**
   * How long a block no tier holds is remembered: a block on its way down the stack (in a tiered
   * cache's spill queue, or handed from the disk to the object store) has left one tier and not
   * yet reached the next.
   */
  static final long GRACE_NANOS = 30_000_000_000L;

  /**
   * An engine block's name within a namespace of the cache (its {@link Namespace#tag}, 0 for
   * none): what a lookup by hash asks for.
   */
  private record Named(long namespace, String model, long hash) {
    static Named of(long namespace, EngineBlock block) {
      return new Named(namespace, block.model(), block.hash());
    }
  }

  private final ConcurrentHashMap<BlockKey, Held> held = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<Named, BlockKey> byHash = new ConcurrentHashMap<>();
  private final ConcurrentLinkedQueue<Left> left = new ConcurrentLinkedQueue<>();
  private final boolean enabled;

  /**
   * @param enabled whether KV events are told; if not, PUTs' engine blocks are neither read nor
   *     kept
   */
  public EngineBlocks(boolean enabled) {
    this.enabled = enabled;
  }

  /**
   * The engine block a PUT's headers name ({@link EngineBlock#fromHeaders}); null if they name
   * none, or KV events are off (then the headers are not read).
   *
   * @throws IllegalArgumentException why the headers do not name a block
   */
  public EngineBlock named(Function<String, String> headers) {
    return enabled ? EngineBlock.fromHeaders(headers) : null;
  }

  /**
   * {@code writer}, noting {@code block} under its key while it commits (kept if a tier then holds
   * it, forgotten if none does); {@code writer} itself if {@code block} is null.
   */
  public BlockWriter tag(BlockWriter writer, EngineBlock block) {
    return block == null ? writer : new Tagged(writer, block);
  }

  /** Engine blocks known. */
  public int size() {
    return held.size();
  }

  /** Whether PUTs' engine blocks are read and kept (KV events are on). */
  public boolean enabled() {
    return enabled;
  }

  /**
   * The key under which namespace {@code namespace} holds (or held a moment ago) the engine block
   * {@code hash} of {@code model}; null if no PUT named it, or it is forgotten.
   */
  public BlockKey keyOf(Namespace namespace, String model, long hash) {
    return byHash.get(new Named(namespace.tag(), model, hash));
  }

  /**
   * The tag a tier keeps with the block under {@code key} as it writes it ({@link
   * EngineBlock#tag}); null if no PUT named it.
   */
  byte[] tagOf(BlockKey key) {
    Held h = held.get(key);
    return h == null ? null : h.block.tag(h.namespace);
  }

  /**
   * The block under {@code key}, as the tier of {@code bit} kept it ({@link #tagOf}), now known
   * held by that tier: the block a PUT named since, if one did; null if the tier was known to hold
   * it already (nothing to tell).
   */
  EngineBlock restore(BlockKey key, EngineBlock.Kept kept, int bit) {
    boolean[] news = {true};
    Held h = held.compute(key, (k, old) -> {
      if (old != null) {
        news[0] = (old.tiers & bit) == 0;
        return new Held(old.block, old.namespace, old.tiers | bit, old.commits);
      }
      byHash.put(Named.of(kept.namespace(), kept.block()), k);
      return new Held(kept.block(), kept.namespace(), bit, 0);
    });
    return news[0] ? h.block : null;
  }

  /** The block under {@code key}, now held by the tier of {@code bit} too; null if unknown. */
  EngineBlock stored(BlockKey key, int bit) {
    forgetLeft(System.nanoTime());
    Held h = held.computeIfPresent(key,
        (k, old) -> new Held(old.block, old.namespace, old.tiers | bit, old.commits));
    return h == null ? null : h.block;
  }

  /**
   * The block under {@code key}, no longer held by the tier of {@code bit} (forgotten {@link
   * #GRACE_NANOS} after no tier holds it); null if unknown.
   */
  EngineBlock removed(BlockKey key, int bit) {
    long now = System.nanoTime();
    forgetLeft(now);
    Held h = held.computeIfPresent(key,
        (k, old) -> new Held(old.block, old.namespace, old.tiers & ~bit, old.commits));
    if (h == null) {
      return null;
    }
    if (h.tiers == 0) {
      left.add(new Left(key, now));
    }
    return h.block;
  }

  /** Forgets the blocks that left their last tier more than {@link #GRACE_NANOS} ago. */
  private void forgetLeft(long now) {
    Left first = left.peek();
    if (first == null || now - first.nanos <= GRACE_NANOS) {
      return;
    }
    synchronized (left) {
      for (Left l = left.peek(); l != null && now - l.nanos > GRACE_NANOS; l = left.peek()) {
        left.poll();
        held.computeIfPresent(l.key, (k, old) -> old.tiers == 0 && old.commits == 0
            ? forget(k, old) : old);
      }
    }
  }

  /** Notes {@code block} under {@code key} before a commit of it. */
  private void committing(BlockKey key, EngineBlock block) {
    long namespace = key.namespace().map(Namespace::tag).orElse(0L);
    held.compute(key, (k, old) -> {
      if (old != null && !(old.block.equals(block) && old.namespace == namespace)) {
        byHash.remove(Named.of(old.namespace, old.block), k);
      }
      byHash.put(Named.of(namespace, block), k);
      return old == null ? new Held(block, namespace, 0, 1)
          : new Held(block, namespace, old.tiers, old.commits + 1);
    });
  }

  /** After a commit of a block under {@code key}: forgotten if no tier holds it. */
  private void committed(BlockKey key) {
    held.computeIfPresent(key, (k, old) -> old.tiers == 0 && old.commits <= 1
        ? forget(k, old) : new Held(old.block, old.namespace, old.tiers, old.commits - 1));
  }

  /** Forgets the name of {@code old} under {@code key}; null, for the held entry's removal. */
  private Held forget(BlockKey key, Held old) {
    byHash.remove(Named.of(old.namespace, old.block), key);
    return null;
  }

  /** A writer that notes its engine block while it commits. */
  private final class Tagged extends ForwardingBlockWriter {
    private final EngineBlock block;

    Tagged(BlockWriter writer, EngineBlock block) {
      super(writer);
      this.block = block;
    }

    @Override
    public PutStatus commit() {
      committing(delegate.key(), block);
      try {
        return delegate.commit();
      } finally {
        committed(delegate.key());
      }
    }

    @Override
    public Optional<PutStatus> tryCommit() {
      committing(delegate.key(), block);
      try {
        return delegate.tryCommit();
      } finally {
        committed(delegate.key());
      }
    }
  }
}
