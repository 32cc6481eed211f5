package dev.kvcache.bench.trace;

import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * W-TinyLFU with a fixed window, the policy family of the RAM tier's Caffeine, with exact counts
 * instead of a sketch: new blocks enter an LRU window of {@code windowFraction} of the capacity;
 * a block leaving the window enters the main space only if it was seen more often than the main
 * space's next victim; the main space is a segmented LRU (80% protected for blocks hit there).
 * Counts are capped at 15 and halved every ten capacities of accesses, as Caffeine ages its
 * sketch. Caffeine moves its window by hill climbing; running this model across windows shows
 * the most any window could give on a trace.
 */
final class WindowTinyLfuModel implements PrefixCacheModel {

  private final long windowCapacity;
  private final long mainCapacity;
  private final long protectedCapacity;
  private final LinkedHashMap<Integer, Boolean> window = new LinkedHashMap<>(16, 0.75f, true);
  private final LinkedHashMap<Integer, Boolean> probation = new LinkedHashMap<>(16, 0.75f, true);
  private final LinkedHashMap<Integer, Boolean> protectedSpace = new LinkedHashMap<>(16, 0.75f, true);
  private final Map<Integer, Integer> counts = new HashMap<>();
  private final long agePeriod;
  private long accesses;

  WindowTinyLfuModel(long capacityBlocks, double windowFraction) {
    this.windowCapacity = Math.max(1, (long) (capacityBlocks * windowFraction));
    this.mainCapacity = capacityBlocks - windowCapacity;
    this.protectedCapacity = (long) (mainCapacity * 0.8);
    this.agePeriod = Math.max(1000, 10 * capacityBlocks);
  }

  @Override
  public int serve(int[] ids) {
    int hits = PrefixCacheModel.leadingHits(ids, this::cached);
    for (int id : ids) {
      count(id);
      if (window.containsKey(id) || protectedSpace.containsKey(id)) {
        window.get(id);
        protectedSpace.get(id);
      } else if (probation.remove(id) != null) {
        protectedSpace.put(id, Boolean.TRUE);
        while (protectedSpace.size() > protectedCapacity) {
          probation.put(removeEldest(protectedSpace), Boolean.TRUE);
        }
      } else {
        window.put(id, Boolean.TRUE);
        while (window.size() > windowCapacity) {
          admit(removeEldest(window));
        }
      }
    }
    return hits;
  }

  private boolean cached(int id) {
    return window.containsKey(id) || probation.containsKey(id) || protectedSpace.containsKey(id);
  }

  /** A block leaving the window: into the main space if it has room or beats the next victim. */
  private void admit(int candidate) {
    if (probation.size() + protectedSpace.size() < mainCapacity) {
      probation.put(candidate, Boolean.TRUE);
      return;
    }
    LinkedHashMap<Integer, Boolean> victims = probation.isEmpty() ? protectedSpace : probation;
    int victim = victims.keySet().iterator().next();
    if (counts.getOrDefault(candidate, 0) > counts.getOrDefault(victim, 0)) {
      victims.remove(victim);
      probation.put(candidate, Boolean.TRUE);
    }
  }

  private void count(int id) {
    counts.merge(id, 1, (a, b) -> Math.min(15, a + b));
    if (++accesses >= agePeriod) {
      accesses /= 2;
      for (Iterator<Map.Entry<Integer, Integer>> it = counts.entrySet().iterator(); it.hasNext(); ) {
        Map.Entry<Integer, Integer> e = it.next();
        if (e.getValue() <= 1) {
          it.remove();
        } else {
          e.setValue(e.getValue() >> 1);
        }
      }
    }
  }

  private static int removeEldest(LinkedHashMap<Integer, Boolean> map) {
    Iterator<Integer> it = map.keySet().iterator();
    int eldest = it.next();
    it.remove();
    return eldest;
  }
}
