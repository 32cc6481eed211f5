package dev.kvcache.bench.trace;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Exact LRU over block ids, the reference every admission-free cache approaches: every block of a
 * request becomes the most recently used, the leading hits because they are loaded, the rest
 * because they are stored.
 *
 * <p>With {@code skipLast}, each request's last block is left out unless it was found: in
 * Mooncake's traces the last block of a request is its partial block, whose id the next turn does
 * not reuse (0.8% of them are used again on the conversation trace, against 24% of all blocks). An
 * engine knows which block of a request is partial; most never store one.
 */
final class LruModel implements PrefixCacheModel {

  private final long capacity;
  private final boolean skipLast;
  private final LinkedHashMap<Integer, Boolean> blocks;

  LruModel(long capacityBlocks) {
    this(capacityBlocks, false);
  }

  LruModel(long capacityBlocks, boolean skipLast) {
    this.capacity = capacityBlocks;
    this.skipLast = skipLast;
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
    int stored = skipLast && hits < ids.length ? ids.length - 1 : ids.length;
    for (int i = 0; i < stored; i++) {
      blocks.put(ids[i], Boolean.TRUE);
    }
    return hits;
  }
}
