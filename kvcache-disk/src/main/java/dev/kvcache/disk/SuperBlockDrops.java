package dev.kvcache.disk;

import static dev.kvcache.disk.internal.RecordLayout.KIND_BLOCK;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.disk.internal.JournalEntry;
import dev.kvcache.disk.internal.Location;
import dev.kvcache.disk.internal.Records;
import dev.kvcache.disk.internal.SuperBlock;
import dev.kvcache.spi.BlockEvictionListener;
import dev.kvcache.spi.TierCounters;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Drops super-blocks to make room: their blocks leave the index as evictions, handed to the
 * eviction listener if there is one; the journal records the drop durably, and the file is deleted
 * once no lease pins it.
 */
final class SuperBlockDrops {

  private static final Logger log = LoggerFactory.getLogger(SuperBlockDrops.class);

  private final BlockIndex index;
  private final SuperBlockSpace space;
  private final MetadataLog metadata;
  private final RecordReads reads;
  private final TierCounters counters;
  private final LongAdder dropped = new LongAdder();
  private volatile BlockEvictionListener evictionListener;

  SuperBlockDrops(BlockIndex index, SuperBlockSpace space, MetadataLog metadata,
      RecordReads reads, TierCounters counters) {
    this.index = index;
    this.space = space;
    this.metadata = metadata;
    this.reads = reads;
    this.counters = counters;
  }

  /** Hands the live blocks of each super-block dropped from now on to {@code listener}. */
  void onEviction(BlockEvictionListener listener) {
    this.evictionListener = Objects.requireNonNull(listener, "listener");
  }

  /** Super-blocks dropped to make room. */
  long dropped() {
    return dropped.sum();
  }

  /**
   * Drops a super-block: its blocks leave the index, the journal records the drop durably, and
   * the file is deleted once no lease pins it.
   */
  void drop(SuperBlock victim) throws IOException {
    if (!space.superBlocks().containsKey(victim.id()) || !victim.pin()) {
      return; // dropped already
    }
    // its blocks, found from its record headers: a sealed super-block gets no new index entries.
    // The pin holds its file until they are handed over, even if another thread drops it meanwhile
    List<Map.Entry<BlockKey, Location>> indexed = new ArrayList<>();
    List<Map.Entry<BlockKey, Location>> evicted = new ArrayList<>();
    MetadataLog.Ticket ticket;
    try {
      Records.scan(victim, victim.end(), (kind, key, loc) -> {
        Location cur = index.get(key);
        if (kind == KIND_BLOCK && cur != null && cur.superBlockId == victim.id()
            && cur.payloadOffset == loc.payloadOffset) {
          indexed.add(Map.entry(key, cur));
        }
      });
      ticket = metadata.append(JournalEntry.drop(victim.id()), () -> {
        for (Map.Entry<BlockKey, Location> e : indexed) {
          if (index.remove(e.getKey(), e.getValue())) {
            counters.eviction();
            evicted.add(e); // by this thread alone, if two drop the super-block at once
          }
        }
      });
      handOverEvicted(victim, evicted);
    } finally {
      victim.unpin();
    }
    ticket.awaitDurable();
    if (!space.remove(victim)) {
      return;
    }
    dropped.increment();
    victim.drop();
  }

  /**
   * Hands the blocks a super-block about to be dropped held to the eviction listener, if any, each
   * as a checked lease that keeps the file until the listener lets it go. A damaged record is
   * dropped and not handed over.
   */
  private void handOverEvicted(SuperBlock victim, List<Map.Entry<BlockKey, Location>> live) {
    BlockEvictionListener listener = evictionListener;
    if (listener == null) {
      return;
    }
    for (Map.Entry<BlockKey, Location> e : live) {
      if (!victim.pin()) {
        return;
      }
      // the key as the record names it, with its namespace, so that a tier below can name it too
      BlockKey key = Records.withNamespace(e.getKey(), victim, e.getValue());
      BlockLease lease = reads.leaseAt(key, e.getValue(), victim, false);
      if (lease == null) {
        continue; // damaged: dropped, and not passed on
      }
      try {
        listener.onEvicted(lease);
      } catch (RuntimeException ex) {
        log.error("eviction listener failed on block {}; the lease stays with the listener",
            key, ex);
      }
    }
  }
}
