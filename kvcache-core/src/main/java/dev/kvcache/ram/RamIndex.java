package dev.kvcache.ram;

import dev.kvcache.BlockKey;
import dev.kvcache.Namespace;
import dev.kvcache.internal.memory.OffHeapBlock;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;

/**
 * The RAM tier's index of its blocks and its eviction policy: keys to blocks, bounded by the
 * blocks' allocated bytes. A block the policy evicts (to stay under the bound, or by {@link
 * #evictColdest}) is removed and handed to the eviction callback inside the removal, so a put of the
 * same key waits until the callback returned.
 */
interface RamIndex {

  /** An index for {@code policy} that keeps its blocks' allocated bytes within {@code maxBytes}. */
  static RamIndex create(RamPolicy policy, long maxBytes,
      BiConsumer<BlockKey, OffHeapBlock> onEvicted) {
    return switch (policy) {
      case LRU -> new LruRamIndex(maxBytes, onEvicted);
      case W_TINY_LFU -> new CaffeineRamIndex(maxBytes, onEvicted);
    };
  }

  /**
   * An index for {@code policy} within {@code maxBytes}, of which each namespace of {@code quotas}
   * may hold its quota and no more, and the other namespaces together what the quotas leave
   * ({@link PartitionedRamIndex}); with no quotas, {@link #create(RamPolicy, long, BiConsumer)}.
   *
   * @throws IllegalArgumentException if the quotas leave nothing of {@code maxBytes}
   */
  static RamIndex create(RamPolicy policy, long maxBytes, Map<Namespace, Long> quotas,
      BiConsumer<BlockKey, OffHeapBlock> onEvicted) {
    return quotas.isEmpty()
        ? create(policy, maxBytes, onEvicted)
        : new PartitionedRamIndex(policy, maxBytes, quotas, onEvicted);
  }

  /** The block under {@code key}, a use of it for the policy; or null. */
  OffHeapBlock get(BlockKey key);

  /** The block under {@code key}, leaving the policy's ranking as it was; or null. */
  OffHeapBlock peek(BlockKey key);

  boolean containsKey(BlockKey key);

  /** Stores {@code block} under {@code key}; the block it replaced, or null. May evict others. */
  OffHeapBlock put(BlockKey key, OffHeapBlock block);

  /** Removes {@code key} if it maps to {@code block}. */
  boolean remove(BlockKey key, OffHeapBlock block);

  /** Removes {@code key}; the block it mapped to, or null. */
  OffHeapBlock remove(BlockKey key);

  /**
   * Evicts, through the eviction callback, the block the policy ranks coldest of those a put of
   * {@code forKey} may evict to make room: any block, unless the index keeps namespaces apart.
   *
   * @return its allocated bytes; 0 if it was replaced or removed meanwhile (look again); -1 if
   *     there is no such block
   */
  long evictColdest(BlockKey forKey);

  /** The blocks' allocated bytes. */
  long bytes();

  /** Every entry, hottest first: a snapshot. */
  Map<BlockKey, OffHeapBlock> hottestFirst();

  /** The keys: a snapshot. */
  List<BlockKey> keys();

  int size();

  /** Runs maintenance the policy has pending. */
  void cleanUp();
}
