package dev.kvcache.bench.trace;

import java.util.Arrays;
import java.util.TreeSet;

/**
 * The clairvoyant ceiling: Belady's MIN with bypass. Knowing the whole trace, it keeps the blocks
 * used again soonest: a block that is full-capacity's farthest next use (or never used again) is
 * not admitted, otherwise the cached block used again farthest in the future is evicted. Hits are
 * counted as leading blocks found, like every model here.
 */
final class BeladyModel implements PrefixCacheModel {

  private static final int NEVER = MooncakeTrace.NEVER;

  private final long capacity;
  /** For each block access in trace order, the position of the next access of the same id. */
  private final int[] nextUse;
  /** The next use of each cached id, or -1 when the id is not cached. */
  private final int[] cachedNextUse;
  /** Cached blocks ordered by next use: (nextUse << 32) | id. */
  private final TreeSet<Long> byNextUse = new TreeSet<>();
  private int position;

  BeladyModel(MooncakeTrace trace, long capacityBlocks) {
    this.capacity = capacityBlocks;
    this.nextUse = trace.nextUses();
    int maxId = trace.maxId();
    this.cachedNextUse = new int[maxId + 1];
    Arrays.fill(cachedNextUse, -1);
  }

  /** Serves the trace's requests in order: the model knows the future only of the trace it was built from. */
  @Override
  public int serve(int[] ids) {
    int hits = PrefixCacheModel.leadingHits(ids, id -> cachedNextUse[id] >= 0);
    for (int id : ids) {
      int next = nextUse[position++];
      if (cachedNextUse[id] >= 0) {
        byNextUse.remove(entry(cachedNextUse[id], id));
        cachedNextUse[id] = -1;
      }
      if (next == NEVER) {
        continue;
      }
      if (byNextUse.size() >= capacity) {
        long farthest = byNextUse.last();
        if ((int) (farthest >>> 32) <= next) {
          continue; // bypass: every cached block is needed sooner
        }
        byNextUse.pollLast();
        cachedNextUse[(int) farthest] = -1;
      }
      byNextUse.add(entry(next, id));
      cachedNextUse[id] = next;
    }
    return hits;
  }

  private static long entry(int next, int id) {
    return ((long) next << 32) | id;
  }
}
