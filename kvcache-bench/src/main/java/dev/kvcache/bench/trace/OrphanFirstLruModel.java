package dev.kvcache.bench.trace;

import java.util.LinkedHashMap;

/**
 * LRU made prefix-aware: a request's blocks are touched from the last to the first, so a chain's
 * tail is always older than its head and leaves first. Every request that touches a block touches
 * its parent after it, so a cached block's parent is always cached: no orphan (a block an engine
 * can no longer load, since it loads only contiguous prefixes) ever takes space. Measures what
 * evicting orphans first is worth against plain {@link LruModel}.
 */
final class OrphanFirstLruModel implements PrefixCacheModel {

  private final long capacity;
  private final LinkedHashMap<Integer, Boolean> blocks = new LinkedHashMap<>(16, 0.75f, true);

  OrphanFirstLruModel(long capacityBlocks) {
    this.capacity = capacityBlocks;
  }

  @Override
  public int serve(int[] ids) {
    int hits = PrefixCacheModel.leadingHits(ids, blocks::containsKey);
    for (int i = ids.length - 1; i >= 0; i--) {
      blocks.put(ids[i], Boolean.TRUE);
    }
    while (blocks.size() > capacity) {
      blocks.remove(blocks.keySet().iterator().next());
    }
    return hits;
  }
}
