package dev.kvcache.bench.trace;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;

/**
 * S3-FIFO (Yang et al., SOSP 2023): a small FIFO of 10% of the capacity where new blocks start, a
 * main FIFO, and a ghost FIFO of evicted ids as long as the main one. A hit counts (up to 3). A
 * block leaving the small FIFO moves to the main one if it was hit there more than once, else its
 * id goes to the ghost; a missed block whose id is a ghost enters the main FIFO directly. The main
 * FIFO gives blocks hit since they entered another round (a count less each time).
 */
final class S3FifoModel implements PrefixCacheModel {

  private final long capacity;
  private final long smallCapacity;
  private final ArrayDeque<Integer> small = new ArrayDeque<>();
  private final ArrayDeque<Integer> main = new ArrayDeque<>();
  private final LinkedHashSet<Integer> ghost = new LinkedHashSet<>();
  /** Cached ids and their hit counts. */
  private final Map<Integer, Integer> freq = new HashMap<>();

  S3FifoModel(long capacityBlocks) {
    this.capacity = capacityBlocks;
    this.smallCapacity = Math.max(1, capacityBlocks / 10);
  }

  @Override
  public int serve(int[] ids) {
    int hits = PrefixCacheModel.leadingHits(ids, freq::containsKey);
    for (int id : ids) {
      Integer f = freq.get(id);
      if (f != null) {
        freq.put(id, Math.min(3, f + 1));
        continue;
      }
      while (freq.size() >= capacity) {
        evict();
      }
      freq.put(id, 0);
      if (ghost.remove(id)) {
        main.addLast(id);
      } else {
        small.addLast(id);
      }
    }
    return hits;
  }

  private void evict() {
    if (small.size() >= smallCapacity || main.isEmpty()) {
      evictSmall();
    } else {
      evictMain();
    }
  }

  private void evictSmall() {
    while (!small.isEmpty()) {
      int id = small.pollFirst();
      if (freq.get(id) > 1) {
        main.addLast(id);
        if (main.size() > capacity - smallCapacity) {
          evictMain();
        }
      } else {
        freq.remove(id);
        ghost.add(id);
        while (ghost.size() > capacity - smallCapacity) {
          ghost.remove(ghost.iterator().next());
        }
        return;
      }
    }
  }

  private void evictMain() {
    while (!main.isEmpty()) {
      int id = main.pollFirst();
      int f = freq.get(id);
      if (f > 0) {
        freq.put(id, f - 1);
        main.addLast(id);
      } else {
        freq.remove(id);
        return;
      }
    }
  }
}
