package dev.kvcache.bench.trace;

import java.util.LinkedHashMap;

/**
 * LRU that admits a block only if the trace uses it again: a half-clairvoyant reference that knows
 * whether a block comes back, not when. How close it gets to the ceiling shows how much of the
 * ceiling's lead is admission (predicting reuse) rather than eviction order.
 */
final class ReuseOracleLruModel implements PrefixCacheModel {

  private final long capacity;
  private final int[] nextUse;
  private final LinkedHashMap<Integer, Boolean> blocks = new LinkedHashMap<>(16, 0.75f, true);
  private int position;

  ReuseOracleLruModel(MooncakeTrace trace, long capacityBlocks) {
    this.capacity = capacityBlocks;
    this.nextUse = trace.nextUses();
  }

  @Override
  public int serve(int[] ids) {
    int hits = PrefixCacheModel.leadingHits(ids, blocks::containsKey);
    for (int id : ids) {
      if (nextUse[position++] == MooncakeTrace.NEVER) {
        blocks.remove(id);
      } else {
        blocks.put(id, Boolean.TRUE);
      }
    }
    while (blocks.size() > capacity) {
      blocks.remove(blocks.keySet().iterator().next());
    }
    return hits;
  }
}
