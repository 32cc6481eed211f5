package dev.kvcache.ram;

import dev.kvcache.BlockKey;
import dev.kvcache.Namespace;
import dev.kvcache.internal.memory.OffHeapBlock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;

/**
 * Namespaces kept apart in RAM: an index of the tier's policy for each namespace with a quota,
 * bounded by that quota, and one for every other namespace together (and keys that name none),
 * which may fill what the quotas' blocks leave of the bound. A block goes to its key's namespace's
 * index.
 *
 * <ul>
 *   <li>A namespace at its quota makes room from its own coldest blocks, and never from another's.
 *   <li>A namespace below its quota that needs room (the bound is reached, or memory must be freed
 *       for its put: {@link #evictColdest}) takes it back from the coldest blocks of the
 *       namespaces without a quota, which borrowed it; from its own only when they hold none.
 *   <li>The namespaces without a quota evict their own coldest blocks, never a block of a
 *       namespace with a quota.
 * </ul>
 *
 * <p>So a quota is both a reservation and a cap: what a namespace holds within it no other put
 * evicts, and what it leaves unused the others may use until it needs it. Measured against
 * partitions that lend nothing and against caps over one order of use ({@code docs/ram-tier.md},
 * "Quotas"). Puts, removals and evictions are serialized by the index's lock; reads go to their
 * partition alone.
 */
final class PartitionedRamIndex implements RamIndex {

  private final Map<Namespace, RamIndex> quotaed;
  private final RamIndex others;
  private final long maxBytes;
  private final Map<Namespace, Long> quotas;
  /** The blocks' allocated bytes in every partition: kept as they change, not summed. */
  private final AtomicLong bytes = new AtomicLong();

  PartitionedRamIndex(RamPolicy policy, long maxBytes, Map<Namespace, Long> quotas,
      BiConsumer<BlockKey, OffHeapBlock> onEvicted) {
    BiConsumer<BlockKey, OffHeapBlock> counted = (key, block) -> {
      bytes.addAndGet(-block.allocatedBytes());
      onEvicted.accept(key, block);
    };
    long quoted = 0;
    Map<Namespace, RamIndex> parts = new HashMap<>();
    for (Map.Entry<Namespace, Long> q : quotas.entrySet()) {
      quoted += q.getValue();
      parts.put(q.getKey(), RamIndex.create(policy, q.getValue(), counted));
    }
    if (quoted >= maxBytes) {
      throw new IllegalArgumentException("the RAM quotas (" + quoted + " bytes in all) leave"
          + " nothing of the " + maxBytes + " bytes the RAM tier may fill for the other"
          + " namespaces: lower them, or raise the RAM tier's capacity");
    }
    this.quotaed = Map.copyOf(parts);
    this.others = RamIndex.create(policy, maxBytes, counted);
    this.maxBytes = maxBytes;
    this.quotas = Map.copyOf(quotas);
  }

  /** The index of {@code key}'s namespace. */
  private RamIndex of(BlockKey key) {
    Namespace ns = key.namespace().orElse(null);
    if (ns == null) {
      return others;
    }
    RamIndex part = quotaed.get(ns);
    return part == null ? others : part;
  }

  /**
   * The index that holds {@code key}'s block: its namespace's; for a key rebuilt from its bytes,
   * which names no namespace, whichever holds a block under it.
   */
  private RamIndex holding(BlockKey key) {
    if (key.namespace().isPresent() || others.containsKey(key)) {
      return of(key);
    }
    for (RamIndex part : quotaed.values()) {
      if (part.containsKey(key)) {
        return part;
      }
    }
    return others;
  }

  /**
   * The blocks' allocated bytes in {@code namespace}'s partition: its own, or the others' (those
   * of every namespace without a quota).
   */
  long bytesOf(Namespace namespace) {
    RamIndex part = namespace == null ? null : quotaed.get(namespace);
    return (part == null ? others : part).bytes();
  }

  @Override
  public OffHeapBlock get(BlockKey key) {
    return holding(key).get(key);
  }

  @Override
  public OffHeapBlock peek(BlockKey key) {
    return holding(key).peek(key);
  }

  @Override
  public boolean containsKey(BlockKey key) {
    return holding(key).containsKey(key);
  }

  /**
   * Stores the block in its namespace's index, which evicts its own coldest past its quota; then,
   * while every partition together is past the bound, evicts the borrowers' coldest blocks (the
   * namespaces' without a quota), and the namespace's own once they hold none.
   */
  @Override
  public synchronized OffHeapBlock put(BlockKey key, OffHeapBlock block) {
    RamIndex part = holding(key);
    bytes.addAndGet(block.allocatedBytes());
    OffHeapBlock previous = part.put(key, block);
    if (previous != null) {
      bytes.addAndGet(-previous.allocatedBytes());
    }
    while (bytes.get() > maxBytes) {
      if (others.evictColdest(key) < 0 && (part == others || part.evictColdest(key) < 0)) {
        break;
      }
    }
    return previous;
  }

  @Override
  public synchronized boolean remove(BlockKey key, OffHeapBlock block) {
    boolean removed = holding(key).remove(key, block);
    if (removed) {
      bytes.addAndGet(-block.allocatedBytes());
    }
    return removed;
  }

  @Override
  public synchronized OffHeapBlock remove(BlockKey key) {
    OffHeapBlock removed = holding(key).remove(key);
    if (removed != null) {
      bytes.addAndGet(-removed.allocatedBytes());
    }
    return removed;
  }

  /**
   * For a namespace with a quota, below it: the borrowers' coldest block (the namespaces' without
   * a quota), or its own if they hold none; at its quota, and for the others: their own.
   */
  @Override
  public synchronized long evictColdest(BlockKey forKey) {
    RamIndex part = of(forKey);
    if (part != others && bytesBelowQuota(forKey) > 0) {
      long freed = others.evictColdest(forKey);
      if (freed >= 0) {
        return freed;
      }
    }
    return part.evictColdest(forKey);
  }

  /** How far {@code key}'s namespace is below its quota, in bytes; 0 at it, or without one. */
  private long bytesBelowQuota(BlockKey key) {
    Namespace ns = key.namespace().orElse(null);
    Long quota = ns == null ? null : quotas.get(ns);
    return quota == null ? 0 : Math.max(0, quota - quotaed.get(ns).bytes());
  }

  @Override
  public long bytes() {
    return bytes.get();
  }

  /** The partitions' blocks, hottest first within each, the partitions taken in turn. */
  @Override
  public Map<BlockKey, OffHeapBlock> hottestFirst() {
    List<Iterator<Map.Entry<BlockKey, OffHeapBlock>>> parts = new ArrayList<>();
    parts.add(others.hottestFirst().entrySet().iterator());
    quotaed.values().forEach(p -> parts.add(p.hottestFirst().entrySet().iterator()));
    Map<BlockKey, OffHeapBlock> out = new LinkedHashMap<>();
    for (boolean any = true; any; ) {
      any = false;
      for (Iterator<Map.Entry<BlockKey, OffHeapBlock>> it : parts) {
        if (it.hasNext()) {
          Map.Entry<BlockKey, OffHeapBlock> e = it.next();
          out.put(e.getKey(), e.getValue());
          any = true;
        }
      }
    }
    return out;
  }

  @Override
  public List<BlockKey> keys() {
    List<BlockKey> keys = new ArrayList<>(others.keys());
    quotaed.values().forEach(p -> keys.addAll(p.keys()));
    return keys;
  }

  @Override
  public int size() {
    int size = others.size();
    for (RamIndex part : quotaed.values()) {
      size += part.size();
    }
    return size;
  }

  @Override
  public void cleanUp() {
    others.cleanUp();
    quotaed.values().forEach(RamIndex::cleanUp);
  }
}
