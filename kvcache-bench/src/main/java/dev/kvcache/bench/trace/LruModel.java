package dev.kvcache.bench.trace;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Exact LRU over block ids, the reference every admission-free cache approaches: every block of a
 * request becomes the most recently used, the leading hits because they are loaded, the rest
 * because they are stored.
 */
final class LruModel implements PrefixCacheModel {

  private final long capacity;
  private final LinkedHashMap<Integer, Boolean> blocks;

  LruModel(long capacityBlocks) {
    this.capacity = capacityBlocks;
    this.blocks = new LinkedHashMap<>(16, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<Integer, Boolean> eldest) {
        return size() > capacity;
      }
    };
  }

  @Override
  public int serve(int[] ids) {
    int hits = PrefixCacheModel.leadingHits(ids, blocks::containsKey);
    for (int id : ids) {
      blocks.put(id, Boolean.TRUE);
    }
    return hits;
  }
}
