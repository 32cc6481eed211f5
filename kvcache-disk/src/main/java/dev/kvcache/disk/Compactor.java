package dev.kvcache.disk;

import static dev.kvcache.disk.internal.RecordLayout.ENCODING_RAW;
import static dev.kvcache.disk.internal.RecordLayout.FIRST_RECORD_OFFSET;
import static dev.kvcache.disk.internal.RecordLayout.HEADER_BYTES;
import static dev.kvcache.disk.internal.RecordLayout.KIND_BLOCK;
import static dev.kvcache.disk.internal.RecordLayout.KIND_TOMBSTONE;

import dev.kvcache.BlockKey;
import dev.kvcache.disk.SuperBlockSpace.Reservation;
import dev.kvcache.disk.internal.JournalEntry;
import dev.kvcache.disk.internal.Location;
import dev.kvcache.disk.internal.RateLimiter;
import dev.kvcache.disk.internal.Records;
import dev.kvcache.disk.internal.SuperBlock;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;

/**
 * The disk tier's reclamation, run by the {@link Reclaimer} thread: picks a victim (the sealed
 * super-block with the least live data, if under a quarter; else, past the high watermark of a
 * stream, its oldest: {@link SuperBlockSpace#pressed}), moves its live blocks forward (all of them when compacting; only those read since
 * written when reclaiming the oldest: a FIFO with second chances), carries forward the tombstones
 * that may still shadow an older record, and drops it.
 */
final class Compactor {

  private final DiskTierConfig config;
  private final BlockIndex index;
  private final SuperBlockSpace space;
  private final ConcurrentSkipListMap<Integer, SuperBlock> superBlocks;
  private final MetadataLog metadata;
  private final RecordReads reads;
  private final SuperBlockSpace.Dropper dropper;
  private final LongAdder bytesWritten;
  private final LongAdder blocksRewritten;
  private final LongAdder bytesRewritten;

  Compactor(DiskTierConfig config, BlockIndex index, SuperBlockSpace space, MetadataLog metadata,
      RecordReads reads, SuperBlockSpace.Dropper dropper, LongAdder bytesWritten,
      LongAdder blocksRewritten, LongAdder bytesRewritten) {
    this.config = config;
    this.index = index;
    this.space = space;
    this.superBlocks = space.superBlocks();
    this.metadata = metadata;
    this.reads = reads;
    this.dropper = dropper;
    this.bytesWritten = bytesWritten;
    this.blocksRewritten = blocksRewritten;
    this.bytesRewritten = bytesRewritten;
  }

  /** Live fraction under which a sealed super-block is compacted. */
  private static final double COMPACT_BELOW_LIVE_FRACTION = 0.25;

  /**
   * One step of background reclamation: compacts the sealed super-block with the least live data
   * if that is under a quarter, else, once a stream passes its high watermark (two super-blocks
   * below the capacity; one below a quota for a quota's stream), reclaims its oldest, rewriting
   * forward its blocks read since written.
   * A compaction that finds no room to move a live block stops and keeps the super-block: only
   * reclaiming the oldest (eviction by age) lets live blocks go. Unless the sync policy is {@code
   * NONE}, every record written so far is forced before the super-block is dropped: the moved
   * ones, and the newer copies that made its other records dead, so that a power loss cannot take
   * a key's newer copy after the drop took the older one.
   *
   * @return whether there was anything to do
   */
  boolean reclaimOnce(RateLimiter limiter, BooleanSupplier stop) throws IOException {
    if (space.closed() || !metadata.ready()) {
      return false;
    }
    SuperBlock sparsest = null;
    double lowest = COMPACT_BELOW_LIVE_FRACTION;
    for (SuperBlock sb : superBlocks.values()) {
      double live = (double) sb.liveBytes().get() / Math.max(1, sb.end() - FIRST_RECORD_OFFSET);
      if (sb.isSealed() && live < lowest && !sb.hasUnfinishedRecords()) {
        lowest = live;
        sparsest = sb;
      }
    }
    boolean compact = sparsest != null;
    SuperBlock victim = sparsest;
    if (victim == null) {
      SuperBlock pressed = space.pressed();
      victim = pressed == null || !pressed.isSealed() || pressed.hasUnfinishedRecords() ? null
          : pressed;
    }
    if (victim == null || !victim.pin()) {
      return false;
    }
    try {
      SuperBlock v = victim;
      List<Map.Entry<BlockKey, Location>> moves = new ArrayList<>();
      List<Map.Entry<BlockKey, Long>> tombstones = new ArrayList<>();
      Records.scan(v, v.end(), (kind, key, loc) -> {
        Location cur = index.get(key);
        if (kind == KIND_BLOCK && cur != null && cur.superBlockId == v.id()
            && cur.payloadOffset == loc.payloadOffset && (compact || cur.hits() > 0)) {
          moves.add(Map.entry(key, cur));
        } else if (kind == KIND_TOMBSTONE && cur == null && mayShadowARecord(v, loc.sequence)) {
          tombstones.add(Map.entry(key, loc.sequence));
        }
      });
      for (Map.Entry<BlockKey, Location> m : moves) {
        if (stop.getAsBoolean() || space.closed()) {
          return true;
        }
        limiter.acquire(m.getValue().recordBytes());
        if (!moveForward(m.getKey(), m.getValue(), v) && compact) {
          return false; // no room: the super-block stays until there is
        }
      }
      carryForward(tombstones, space.streams().of(v.owner()));
      if (config.syncPolicy() != SyncPolicy.NONE) {
        space.forceDirty(); // before the drop's journal entry is durable
      }
    } finally {
      victim.unpin();
    }
    if (!space.closed()) {
      dropper.drop(victim);
    }
    return true;
  }

  /**
   * Rewrites a live block from {@code from} into its stream's active super-block, keeping its sequence
   * number (so a newer put of the key still wins on replay). Journalled only if the index still
   * pointed at the old copy.
   *
   * @return false if there was no room to move it (it stays where it is); true if it was moved,
   *     or was damaged and dropped
   */
  private boolean moveForward(BlockKey key, Location cur, SuperBlock from) throws IOException {
    if (!Records.payloadIntact(from, cur)) {
      reads.corrupt(key, cur, from, "checksum mismatch found while moving it forward");
      return true;
    }
    ByteBuffer tag = Records.tagRegion(from, key, cur); // a damaged tag is left behind
    int tagBytes = tag == null ? 0 : tag.remaining();
    Reservation r = space.reserve(space.streams().of(Records.namespaceTag(from, cur)),
        cur.storedLength, tagBytes);
    if (r == null) {
      return false;
    }
    try {
      return moveInto(r, key, cur, from, tag);
    } finally {
      r.sb.finishRecord();
    }
  }

  /**
   * The rest of {@link #moveForward}, into reservation {@code r}, with the record's tag as it lies
   * (checksummed with the key and sequence, which the move keeps), or null.
   */
  private boolean moveInto(Reservation r, BlockKey key, Location cur, SuperBlock from,
      ByteBuffer tag) throws IOException {
    r.sb.recordSequence(cur.sequence);
    try {
      if (r.sb == from) {
        return true; // cannot happen: the victim is never the active super-block
      }
      r.sb.write(from.slice(cur.payloadOffset, cur.storedLength), r.payload);
      int tagBytes = tag == null ? 0 : tag.remaining();
      if (tag != null) {
        r.sb.write(tag, r.payload - HEADER_BYTES - tagBytes);
      }
      r.sb.write(Records.header(KIND_BLOCK, cur.encoding, cur.sequence, key,
          Records.namespaceTag(from, cur), cur.rawLength, cur.storedLength, cur.payloadCrc,
          tagBytes), r.payload - HEADER_BYTES);
    } finally {
      r.sb.unpin();
    }
    space.written(r.sb);
    Location moved = new Location(r.sb.id(), (int) r.payload, cur.storedLength, cur.rawLength,
        cur.payloadCrc, cur.encoding, cur.sequence, 0);
    boolean always = config.syncPolicy() == SyncPolicy.ALWAYS;
    if (always) {
      r.sb.force(); // before its entry can reach the device
    }
    MetadataLog.Ticket ticket = metadata.appendIf(() -> index.replace(key, cur, moved),
        JournalEntry.put(key, moved, 0, always));
    bytesWritten.add(moved.recordBytes());
    if (ticket != null) {
      blocksRewritten.increment();
      bytesRewritten.add(moved.recordBytes());
      if (always) {
        ticket.awaitDurable();
      }
    }
    return true;
  }

  /**
   * Whether a tombstone of {@code sequence} in {@code victim} may be all that keeps an older record
   * of its key, in another super-block, from coming back in a rebuild from the records.
   */
  private boolean mayShadowARecord(SuperBlock victim, long sequence) {
    for (SuperBlock sb : superBlocks.values()) {
      if (sb != victim && sb.mayHoldRecordsBefore(sequence)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Rewrites tombstones from a super-block about to be dropped into its stream's active one, keeping their
   * sequence numbers, so that a deleted block whose record outlives its tombstone's super-block
   * stays deleted in a rebuild from the records. The journal and the checkpoint already have the
   * deletes: nothing is journalled.
   */
  private void carryForward(List<Map.Entry<BlockKey, Long>> tombstones, long stream)
      throws IOException {
    for (Map.Entry<BlockKey, Long> t : tombstones) {
      Reservation r = space.reserve(stream, 0);
      if (r == null) {
        break; // no room: only a rebuild from the records could bring those blocks back
      }
      try {
        r.sb.recordSequence(t.getValue());
        r.sb.write(Records.header(KIND_TOMBSTONE, ENCODING_RAW, t.getValue(), t.getKey(), 0, 0, 0,
            0),
            r.payload - HEADER_BYTES);
      } finally {
        r.sb.unpin();
        r.sb.finishRecord(); // a tombstone is not indexed
      }
      bytesWritten.add(HEADER_BYTES);
      space.written(r.sb);
    }
  }
}
