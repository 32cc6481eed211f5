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
import java.util.function.BiConsumer;

/**
 * Namespaces kept apart in RAM: an index of the tier's policy for each namespace with a quota,
 * bounded by that quota, and one for every other namespace together (and keys that name none),
 * bounded by what the quotas leave. A block goes to its key's namespace's index; a put there
 * evicts that index's coldest blocks, and only those, whether to stay within its bound or to free
 * memory ({@link #evictColdest}). So a namespace at its quota makes room from its own blocks and
 * never from another's, and a namespace with a quota keeps its blocks whatever the others put.
 *
 * <p>Quotas are partitions, not caps over one order of use: memory a namespace's quota leaves
 * unused is not lent to the others. A lent byte would have to be taken back from the borrower when
 * the namespace needs it, and the borrower's blocks would then be evicted by a put of another
 * namespace, which is what quotas are there to stop ({@code docs/ram-tier.md}, "Quotas").
 */
final class PartitionedRamIndex implements RamIndex {

  private final Map<Namespace, RamIndex> quotaed;
  private final RamIndex others;

  PartitionedRamIndex(RamPolicy policy, long maxBytes, Map<Namespace, Long> quotas,
      BiConsumer<BlockKey, OffHeapBlock> onEvicted) {
    long quoted = 0;
    Map<Namespace, RamIndex> parts = new HashMap<>();
    for (Map.Entry<Namespace, Long> q : quotas.entrySet()) {
      quoted += q.getValue();
      parts.put(q.getKey(), RamIndex.create(policy, q.getValue(), onEvicted));
    }
    if (quoted >= maxBytes) {
      throw new IllegalArgumentException("the RAM quotas (" + quoted + " bytes in all) leave"
          + " nothing of the " + maxBytes + " bytes the RAM tier may fill for the other"
          + " namespaces: lower them, or raise the RAM tier's capacity");
    }
    this.quotaed = Map.copyOf(parts);
    this.others = RamIndex.create(policy, maxBytes - quoted, onEvicted);
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

  /** The blocks' allocated bytes in {@code namespace}'s partition: its own, or the others'. */
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

  @Override
  public OffHeapBlock put(BlockKey key, OffHeapBlock block) {
    return holding(key).put(key, block);
  }

  @Override
  public boolean remove(BlockKey key, OffHeapBlock block) {
    return holding(key).remove(key, block);
  }

  @Override
  public OffHeapBlock remove(BlockKey key) {
    return holding(key).remove(key);
  }

  @Override
  public long evictColdest(BlockKey forKey) {
    return of(forKey).evictColdest(forKey);
  }

  @Override
  public long bytes() {
    long bytes = others.bytes();
    for (RamIndex part : quotaed.values()) {
      bytes += part.bytes();
    }
    return bytes;
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
