package dev.kvcache.ram;

import dev.kvcache.BlockKey;
import dev.kvcache.internal.memory.OffHeapBlock;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link RamPolicy#LRU}: a hash map of nodes threaded on a list in use order (least recent at the
 * head; a use moves its node to the tail, without allocating), and the total of the blocks'
 * allocated bytes, under the index's monitor (whose adaptive spinning suits sections this short
 * better than a lock that parks). A put that takes the total over the bound evicts from the head,
 * on its own thread and under the monitor, until it is within. Every operation is a few pointer
 * moves, next to the copy of kilobytes to megabytes that each read or put makes.
 */
final class LruRamIndex implements RamIndex {

  private static final Logger log = LoggerFactory.getLogger(LruRamIndex.class);

  private static final class Node {
    final BlockKey key;
    OffHeapBlock block;
    Node older;
    Node newer;

    Node(BlockKey key, OffHeapBlock block) {
      this.key = key;
      this.block = block;
    }
  }

  private final long maxBytes;
  private final BiConsumer<BlockKey, OffHeapBlock> onEvicted;
  private final HashMap<BlockKey, Node> map = new HashMap<>();
  private Node oldest;
  private Node newest;
  private long bytes;

  LruRamIndex(long maxBytes, BiConsumer<BlockKey, OffHeapBlock> onEvicted) {
    this.maxBytes = maxBytes;
    this.onEvicted = onEvicted;
  }

  @Override
  public synchronized OffHeapBlock get(BlockKey key) {
    Node n = map.get(key);
    if (n == null) {
      return null;
    }
    if (n != newest) {
      unlink(n);
      append(n);
    }
    return n.block;
  }

  @Override
  public synchronized OffHeapBlock peek(BlockKey key) {
    Node n = map.get(key);
    return n == null ? null : n.block;
  }

  @Override
  public synchronized boolean containsKey(BlockKey key) {
    return map.containsKey(key);
  }

  @Override
  public synchronized OffHeapBlock put(BlockKey key, OffHeapBlock block) {
    Node n = map.get(key);
    OffHeapBlock previous = null;
    if (n == null) {
      n = new Node(key, block);
      map.put(key, n);
    } else {
      previous = n.block;
      n.block = block;
      bytes -= previous.allocatedBytes();
      unlink(n);
    }
    append(n);
    bytes += block.allocatedBytes();
    // never the block just put: the bound always has room for one block
    while (bytes > maxBytes && oldest != n) {
      evict(oldest);
    }
    return previous;
  }

  @Override
  public synchronized boolean remove(BlockKey key, OffHeapBlock block) {
    Node n = map.get(key);
    if (n == null || n.block != block) {
      return false;
    }
    drop(n);
    return true;
  }

  @Override
  public synchronized OffHeapBlock remove(BlockKey key) {
    Node n = map.get(key);
    if (n == null) {
      return null;
    }
    drop(n);
    return n.block;
  }

  @Override
  public synchronized long evictColdest(BlockKey forKey) {
    if (oldest == null) {
      return -1;
    }
    long allocated = oldest.block.allocatedBytes();
    evict(oldest);
    return allocated;
  }

  @Override
  public synchronized Map<BlockKey, OffHeapBlock> hottestFirst() {
    LinkedHashMap<BlockKey, OffHeapBlock> out = new LinkedHashMap<>();
    for (Node n = newest; n != null; n = n.older) {
      out.put(n.key, n.block);
    }
    return out;
  }

  @Override
  public synchronized List<BlockKey> keys() {
    return List.copyOf(map.keySet());
  }

  @Override
  public synchronized long bytes() {
    return bytes;
  }

  @Override
  public synchronized int size() {
    return map.size();
  }

  @Override
  public void cleanUp() {}

  private void evict(Node n) {
    drop(n);
    // a callback that throws is logged, as Caffeine logs a failing listener: the put or eviction
    // that ran it goes on, so no reference it holds is lost
    try {
      onEvicted.accept(n.key, n.block);
    } catch (Throwable t) {
      log.warn("eviction of block {} failed", n.key, t);
    }
  }

  private void drop(Node n) {
    map.remove(n.key);
    unlink(n);
    bytes -= n.block.allocatedBytes();
  }

  private void unlink(Node n) {
    if (n.older != null) {
      n.older.newer = n.newer;
    } else {
      oldest = n.newer;
    }
    if (n.newer != null) {
      n.newer.older = n.older;
    } else {
      newest = n.older;
    }
    n.older = null;
    n.newer = null;
  }

  private void append(Node n) {
    n.older = newest;
    if (newest != null) {
      newest.newer = n;
    }
    newest = n;
    if (oldest == null) {
      oldest = n;
    }
  }
}
