package dev.kvcache.disk;

import static dev.kvcache.disk.internal.RecordLayout.ENCODING_RAW;
import static dev.kvcache.disk.internal.RecordLayout.HEADER_BYTES;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.codec.BlockCodec;
import dev.kvcache.codec.CorruptBlockException;
import dev.kvcache.disk.internal.Location;
import dev.kvcache.disk.internal.Records;
import dev.kvcache.disk.internal.SuperBlock;
import dev.kvcache.spi.LoadRate;
import dev.kvcache.spi.PinnedLease;
import dev.kvcache.spi.TierCounters;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.atomic.LongAdder;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The disk tier's reads: a lease is a view of the mapped record (pinning its super-block) or, for
 * an encoded record, of a decoded copy; a copying read checks and copies a record a cache-sized
 * chunk at a time. Every read checks the record's checksum first: a block whose record is damaged
 * is dropped from the index, counted, logged, and read as a miss.
 */
final class RecordReads {

  private static final Logger log = LoggerFactory.getLogger(RecordReads.class);
  /** Bytes a read checks and then copies at a time: small enough to stay in the core's cache. */
  private static final int VERIFY_CHUNK_BYTES = 64 << 10;

  private final BlockIndex index;
  private final Map<Integer, SuperBlock> superBlocks;
  private final TierCounters counters;
  private final LoadRate loadRate;
  private final LongAdder corruptBlocks;

  RecordReads(BlockIndex index, Map<Integer, SuperBlock> superBlocks, TierCounters counters,
      LoadRate loadRate, LongAdder corruptBlocks) {
    this.index = index;
    this.superBlocks = superBlocks;
    this.counters = counters;
    this.loadRate = loadRate;
    this.corruptBlocks = corruptBlocks;
  }

  BlockLease get(BlockKey key) {
    Location loc = index.get(key);
    SuperBlock sb = pinOrMiss(key, loc);
    if (sb == null) {
      return BlockLease.miss(key);
    }
    BlockLease lease = leaseAt(key, loc, sb, true);
    if (lease == null) {
      counters.miss();
      return BlockLease.miss(key);
    }
    loc.hit();
    counters.hit();
    return lease;
  }

  /**
   * A lease on the block at {@code loc} in {@code sb}, which the caller pinned: the lease takes the
   * pin over (or lets it go, for a decoded copy). Null if the record is damaged: the block is then
   * dropped and the pin let go.
   *
   * @param counted whether the lease counts as open in the statistics: a caller's does, one handed
   *     to the eviction listener does not
   */
  BlockLease leaseAt(BlockKey key, Location loc, SuperBlock sb, boolean counted) {
    ByteBuffer stored = sb.slice(loc.payloadOffset, loc.storedLength);
    ByteBuffer bytes;
    if (loc.encoding == ENCODING_RAW) {
      if (!intact(key, loc, sb, stored)) {
        sb.unpin();
        return null;
      }
      bytes = stored;
    } else {
      ByteBuffer decoded = ByteBuffer.allocateDirect(loc.rawLength);
      boolean ok = decodeInto(key, loc, sb, stored, decoded);
      sb.unpin();
      if (!ok) {
        return null;
      }
      bytes = decoded.flip().asReadOnlyBuffer();
      sb = null;
    }
    if (counted) {
      counters.leaseOpened();
    }
    // an encoded record's checksum is of its container: the block's own is computed once decoded,
    // so that every lease carries the CRC32C of the bytes it shows
    return new DiskLease(key, bytes, sb, OptionalInt.of(
        loc.encoding == ENCODING_RAW ? loc.payloadCrc : Records.crc(bytes.duplicate())), counted);
  }

  /** See {@link DiskTier#getInto}; {@code dst} is writable. */
  GetStatus getInto(BlockKey key, ByteBuffer dst) {
    Location loc = index.get(key);
    SuperBlock sb = pinOrMiss(key, loc);
    if (sb == null) {
      return GetStatus.MISS;
    }
    try {
      if (dst.remaining() < loc.rawLength) {
        return GetStatus.BUFFER_TOO_SMALL;
      }
      long start = System.nanoTime();
      ByteBuffer stored = sb.slice(loc.payloadOffset, loc.storedLength);
      if (loc.encoding == ENCODING_RAW) {
        if (!copyIfIntact(key, loc, sb, stored, dst)) {
          counters.miss();
          return GetStatus.MISS;
        }
      } else if (!decodeInto(key, loc, sb, stored, dst)) {
        counters.miss();
        return GetStatus.MISS;
      }
      loadRate.record(loc.rawLength, System.nanoTime() - start);
      loc.hit();
      counters.hit();
      return GetStatus.HIT;
    } finally {
      sb.unpin();
    }
  }

  /**
   * The super-block holding {@code loc}, pinned; or null, counted as a miss, if there is no such
   * block. An index entry whose super-block is gone (a put that finished while its super-block was
   * being dropped; the journal already orders it before the drop) is removed on the way.
   */
  private SuperBlock pinOrMiss(BlockKey key, Location loc) {
    SuperBlock sb = loc == null ? null : superBlocks.get(loc.superBlockId);
    if (sb != null && sb.pin()) {
      return sb;
    }
    if (loc != null && !superBlocks.containsKey(loc.superBlockId)) {
      index.remove(key, loc);
    }
    counters.miss();
    return null;
  }

  /** Checks a raw record's checksum; a mismatch drops the block. */
  private boolean intact(BlockKey key, Location loc, SuperBlock sb, ByteBuffer stored) {
    int actual = Records.crc(stored);
    if (actual == loc.payloadCrc) {
      return true;
    }
    corrupt(key, loc, sb, String.format("expected checksum 0x%08x, found 0x%08x", loc.payloadCrc,
        actual));
    return false;
  }

  /**
   * Copies a raw record into {@code dst} while checking its checksum, a cache-sized chunk at a
   * time, so the bytes cross the memory bus once rather than once for the check and once for the
   * copy. A mismatch drops the block and puts {@code dst}'s position back.
   */
  private boolean copyIfIntact(BlockKey key, Location loc, SuperBlock sb, ByteBuffer stored,
      ByteBuffer dst) {
    int start = dst.position();
    int length = stored.remaining();
    CRC32C crc = new CRC32C();
    for (int at = 0; at < length; at += VERIFY_CHUNK_BYTES) {
      stored.limit(Math.min(length, at + VERIFY_CHUNK_BYTES)).position(at);
      crc.update(stored);
      dst.put(stored.position(at));
    }
    int actual = (int) crc.getValue();
    if (actual == loc.payloadCrc) {
      return true;
    }
    dst.position(start);
    corrupt(key, loc, sb, String.format("expected checksum 0x%08x, found 0x%08x", loc.payloadCrc,
        actual));
    return false;
  }

  /** Decodes an encoded record into {@code dst}; a damaged container drops the block. */
  private boolean decodeInto(BlockKey key, Location loc, SuperBlock sb, ByteBuffer stored,
      ByteBuffer dst) {
    int start = dst.position();
    try {
      BlockCodec.decode(stored, dst);
      if (dst.position() - start == loc.rawLength) {
        return true;
      }
      int decoded = dst.position() - start;
      dst.position(start);
      corrupt(key, loc, sb, "decodes to " + decoded + " bytes, expected " + loc.rawLength);
    } catch (CorruptBlockException e) {
      corrupt(key, loc, sb, e.getMessage());
    }
    return false;
  }

  /** Drops a block whose record at {@code loc} in {@code sb} is damaged, as {@code detail} says. */
  void corrupt(BlockKey key, Location loc, SuperBlock sb, String detail) {
    corruptBlocks.increment();
    index.remove(key, loc);
    log.warn("dropped block {}: record at offset {} of {} is damaged: {}", key,
        loc.payloadOffset - HEADER_BYTES, sb.path(), detail);
  }

  /** A lease on a mapped record (pinning its super-block), or on a decoded copy. */
  private final class DiskLease extends PinnedLease {
    private final ByteBuffer bytes;
    private final SuperBlock pinned;
    private final OptionalInt crc32c;
    /** Whether it counts as open in the statistics: not if it was handed to the listener. */
    private final boolean counted;

    DiskLease(BlockKey key, ByteBuffer bytes, SuperBlock pinned, OptionalInt crc32c,
        boolean counted) {
      super(key);
      this.bytes = bytes;
      this.pinned = pinned;
      this.crc32c = crc32c;
      this.counted = counted;
    }

    @Override
    public OptionalInt crc32c() {
      return crc32c;
    }

    @Override
    public int length() {
      return bytes.capacity();
    }

    @Override
    protected ByteBuffer view() {
      return bytes.duplicate().clear();
    }

    @Override
    protected void release() {
      if (counted) {
        counters.leaseClosed();
      }
      if (pinned != null) {
        pinned.unpin();
      }
    }
  }
}
