package dev.kvcache.disk;

import dev.kvcache.BlockKey;
import dev.kvcache.disk.internal.Location;
import dev.kvcache.disk.internal.SuperBlock;
import java.util.Collection;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * The disk tier's index: which record holds each block, and, kept beside it, the live bytes of
 * each super-block (what compaction picks its victims by). Every change that adds or removes an
 * entry goes through here, so that the two agree, and so that the tier tells its listener of each
 * block that comes and goes (a record moved by compaction does neither).
 */
final class BlockIndex {

  private final ConcurrentHashMap<BlockKey, Location> entries;
  private final Map<Integer, SuperBlock> superBlocks;
  private final Consumer<BlockKey> stored;
  private final Consumer<BlockKey> removed;

  /**
   * The index {@code entries}, over {@code superBlocks}; counts their live bytes, and hands
   * {@code stored} each key that comes to be indexed, {@code removed} each that leaves.
   */
  BlockIndex(ConcurrentHashMap<BlockKey, Location> entries, Map<Integer, SuperBlock> superBlocks,
      Consumer<BlockKey> stored, Consumer<BlockKey> removed) {
    this.entries = entries;
    this.superBlocks = superBlocks;
    this.stored = stored;
    this.removed = removed;
    for (Location loc : entries.values()) {
      live(loc, +1);
    }
  }

  Location get(BlockKey key) {
    return entries.get(key);
  }

  boolean contains(BlockKey key) {
    return entries.containsKey(key);
  }

  int size() {
    return entries.size();
  }

  /** Every entry, as a checkpoint writes them (weakly consistent under concurrent changes). */
  Set<Map.Entry<BlockKey, Location>> entries() {
    return entries.entrySet();
  }

  Collection<Location> locations() {
    return entries.values();
  }

  /**
   * Indexes {@code loc} under {@code key} unless the key's entry is a newer record already (a
   * higher sequence).
   */
  void install(BlockKey key, Location loc) {
    Location[] replaced = {null};
    Location now = entries.merge(key, loc, (cur, nu) -> {
      if (nu.sequence > cur.sequence) {
        replaced[0] = cur;
        return nu;
      }
      return cur;
    });
    if (now == loc) {
      live(loc, +1);
      stored.accept(key);
    }
    if (replaced[0] != null) {
      live(replaced[0], -1);
    }
  }

  /** Removes the key's entry if it is {@code loc}; whether it was. */
  boolean remove(BlockKey key, Location loc) {
    if (entries.remove(key, loc)) {
      live(loc, -1);
      removed.accept(key);
      return true;
    }
    return false;
  }

  /** Points the key at {@code moved} if it still points at {@code cur}; whether it did. */
  boolean replace(BlockKey key, Location cur, Location moved) {
    if (entries.replace(key, cur, moved)) {
      live(cur, -1);
      live(moved, +1);
      return true;
    }
    return false;
  }

  /** Removes the key's entry if its record is older than {@code sequence}; whether it did. */
  boolean deleteOlderThan(BlockKey key, long sequence) {
    boolean[] gone = {false};
    entries.computeIfPresent(key, (k, loc) -> {
      if (loc.sequence < sequence) {
        gone[0] = true;
        live(loc, -1);
        return null;
      }
      return loc;
    });
    if (gone[0]) {
      removed.accept(key);
    }
    return gone[0];
  }

  private void live(Location loc, int sign) {
    SuperBlock sb = superBlocks.get(loc.superBlockId);
    if (sb != null) {
      sb.liveBytes().addAndGet(sign * loc.recordBytes());
    }
  }
}
