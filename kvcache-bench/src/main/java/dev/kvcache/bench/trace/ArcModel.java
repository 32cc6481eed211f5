package dev.kvcache.bench.trace;

import java.util.Iterator;
import java.util.LinkedHashSet;

/**
 * ARC (Megiddo and Modha, FAST 2003): blocks seen once ({@code t1}) and more than once ({@code
 * t2}), each an LRU list, with ghost lists of the ids each recently evicted ({@code b1}, {@code
 * b2}); a hit in a ghost list moves the target size {@code p} of {@code t1} towards the list that
 * would have kept it.
 */
final class ArcModel implements PrefixCacheModel {

  private final long capacity;
  private final LinkedHashSet<Integer> t1 = new LinkedHashSet<>();
  private final LinkedHashSet<Integer> t2 = new LinkedHashSet<>();
  private final LinkedHashSet<Integer> b1 = new LinkedHashSet<>();
  private final LinkedHashSet<Integer> b2 = new LinkedHashSet<>();
  private double p;

  ArcModel(long capacityBlocks) {
    this.capacity = capacityBlocks;
  }

  @Override
  public int serve(int[] ids) {
    int hits = PrefixCacheModel.leadingHits(ids, id -> t1.contains(id) || t2.contains(id));
    for (int id : ids) {
      access(id);
    }
    return hits;
  }

  private void access(int id) {
    if (t1.remove(id) || t2.remove(id)) {
      t2.add(id);
    } else if (b1.contains(id)) {
      p = Math.min(capacity, p + Math.max((double) b2.size() / b1.size(), 1));
      replace(false);
      b1.remove(id);
      t2.add(id);
    } else if (b2.contains(id)) {
      p = Math.max(0, p - Math.max((double) b1.size() / b2.size(), 1));
      replace(true);
      b2.remove(id);
      t2.add(id);
    } else {
      long l1 = t1.size() + b1.size();
      long total = l1 + t2.size() + b2.size();
      if (l1 == capacity) {
        if (t1.size() < capacity) {
          removeOldest(b1);
          replace(false);
        } else {
          removeOldest(t1);
        }
      } else if (total >= capacity) {
        if (total == 2 * capacity) {
          removeOldest(b2);
        }
        replace(false);
      }
      t1.add(id);
    }
  }

  /** Evicts the oldest block of {@code t1} or {@code t2} into its ghost list. */
  private void replace(boolean inB2) {
    if (!t1.isEmpty() && ((inB2 && t1.size() == (long) p) || t1.size() > p)) {
      b1.add(removeOldest(t1));
    } else if (!t2.isEmpty()) {
      b2.add(removeOldest(t2));
    } else if (!t1.isEmpty()) {
      b1.add(removeOldest(t1));
    }
  }

  private static int removeOldest(LinkedHashSet<Integer> list) {
    Iterator<Integer> it = list.iterator();
    int id = it.next();
    it.remove();
    return id;
  }
}
