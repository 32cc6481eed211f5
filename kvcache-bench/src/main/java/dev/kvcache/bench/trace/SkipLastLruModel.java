package dev.kvcache.bench.trace;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Exact LRU that leaves each request's last block out, unless it was found: in Mooncake's traces
 * the last block of a request is its partial block, whose id the next turn does not reuse (0.8% of
 * them are used again on the conversation trace, against 24% of all blocks). An engine knows which
 * block of a request is partial; most never store one.
 */
final class SkipLastLruModel implements PrefixCacheModel {

  private final long capacity;
  private final LinkedHashMap<Integer, Boolean> blocks;

  SkipLastLruModel(long capacityBlocks) {
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
    int last = hits == ids.length ? ids.length : ids.length - 1;
    for (int i = 0; i < last; i++) {
      blocks.put(ids[i], Boolean.TRUE);
    }
    return hits;
  }
}
