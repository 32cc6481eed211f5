package dev.kvcache.bench.trace;

import java.util.HashMap;
import java.util.Map;

/**
 * SIEVE (Zhang et al., NSDI 2024): one FIFO queue and a hand. A hit only marks its block visited;
 * to evict, the hand walks from the oldest block towards the newest, clearing marks, and evicts the
 * first unmarked block, staying there for the next eviction. New blocks enter at the new end.
 */
final class SieveModel implements PrefixCacheModel {

  private static final class Node {
    final int id;
    boolean visited;
    Node newer;
    Node older;

    Node(int id) {
      this.id = id;
    }
  }

  private final long capacity;
  private final Map<Integer, Node> nodes = new HashMap<>();
  private Node newest;
  private Node oldest;
  private Node hand;

  SieveModel(long capacityBlocks) {
    this.capacity = capacityBlocks;
  }

  @Override
  public int serve(int[] ids) {
    int hits = PrefixCacheModel.leadingHits(ids, nodes::containsKey);
    for (int id : ids) {
      Node node = nodes.get(id);
      if (node != null) {
        node.visited = true;
        continue;
      }
      if (nodes.size() >= capacity) {
        evict();
      }
      node = new Node(id);
      node.older = newest;
      if (newest != null) {
        newest.newer = node;
      }
      newest = node;
      if (oldest == null) {
        oldest = node;
      }
      nodes.put(id, node);
    }
    return hits;
  }

  private void evict() {
    Node p = hand != null ? hand : oldest;
    while (p.visited) {
      p.visited = false;
      p = p.newer != null ? p.newer : oldest;
    }
    hand = p.newer;
    if (p.older != null) {
      p.older.newer = p.newer;
    } else {
      oldest = p.newer;
    }
    if (p.newer != null) {
      p.newer.older = p.older;
    } else {
      newest = p.older;
    }
    nodes.remove(p.id);
  }
}
