package dev.kvcache.disk;

import static dev.kvcache.disk.internal.RecordLayout.ENCODING_RAW;
import static dev.kvcache.disk.internal.RecordLayout.ENCODING_SEALED;
import static dev.kvcache.disk.internal.RecordLayout.HEADER_BYTES;
import static dev.kvcache.disk.internal.RecordLayout.PAGE;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.codec.BlockCodec;
import dev.kvcache.codec.CorruptBlockException;
import dev.kvcache.disk.internal.DirectReads;
import dev.kvcache.disk.internal.Location;
import dev.kvcache.disk.internal.Records;
import dev.kvcache.disk.internal.SuperBlock;
import dev.kvcache.seal.Sealer;
import dev.kvcache.spi.LoadRate;
import dev.kvcache.spi.PinnedLease;
import dev.kvcache.spi.TierCounters;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The disk tier's reads: a lease is a view of the mapped record (pinning its super-block) or, for
 * an encoded record, of a decoded copy; a copying read checks and copies a record a cache-sized
 * chunk at a time. A raw record of {@link #DIRECT_READ_MIN_BYTES} or more whose pages are not all
 * in the page cache is read past it ({@link DiskTierConfig#directReads()}) into a pooled aligned
 * buffer, a chunk at a time with several in flight ({@link DirectReads}), checked (and, for a
 * copying read, copied) a chunk at a time as the chunks arrive; a lease then shows the buffer.
 * Every read checks the record's checksum first: a block whose record is damaged (or could not be
 * read) is dropped from the index, counted, logged, and read as a miss. A sealed record is opened
 * into the caller's buffer, or a copy a lease shows; one that does not open (its tag fails, its
 * namespace's salt or its master key is gone) is dropped and read as a miss too, counted apart
 * ({@link Seals#failures}).
 */
final class RecordReads implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(RecordReads.class);
  /** Bytes a read checks and then copies at a time: small enough to stay in the core's cache. */
  private static final int VERIFY_CHUNK_BYTES = 64 << 10;
  /** Raw records at least this long, not in the page cache, are read past it. */
  static final int DIRECT_READ_MIN_BYTES = 64 << 10;
  /**
   * The longest block a batch reads past the page cache: one the chunks in flight of a single read
   * cover. Batches of 16 blocks of 32 MiB read past the page cache ran at 0.27–0.77 of the mapped
   * reads' speed, for several times the CPU: 512 MiB of leases held at once, past the pool, are
   * buffers allocated and zeroed.
   */
  private static final int BATCHED_READ_MAX_BYTES = DirectReads.CHUNK_BYTES
      * DirectReads.QUEUE_DEPTH;
  /** Bytes of buffers for direct reads kept for the next reads. */
  private static final long POOLED_DIRECT_READ_BYTES = 64L << 20;

  private final BlockIndex index;
  private final Map<Integer, SuperBlock> superBlocks;
  private final TierCounters counters;
  private final LoadRate loadRate;
  private final LongAdder corruptBlocks;
  private final LongAdder directReadBytes = new LongAdder();
  /** Null if reads never go past the page cache. */
  private final DirectReads direct;
  /** The sealed namespaces; null if none is. */
  private final Seals seals;

  RecordReads(BlockIndex index, Map<Integer, SuperBlock> superBlocks, TierCounters counters,
      LoadRate loadRate, LongAdder corruptBlocks, boolean directReads, String dir, Seals seals) {
    this.seals = seals;
    this.index = index;
    this.superBlocks = superBlocks;
    this.counters = counters;
    this.loadRate = loadRate;
    this.corruptBlocks = corruptBlocks;
    this.direct = directReads ? new DirectReads(POOLED_DIRECT_READ_BYTES, dir) : null;
  }

  /** Ends the IO threads of direct reads; a read after this reads its chunks itself. */
  @Override
  public void close() {
    if (direct != null) {
      direct.close();
    }
  }

  /** Bytes of records read past the page cache. */
  long directReadBytes() {
    return directReadBytes.sum();
  }

  BlockLease get(BlockKey key) {
    return get(key, Integer.MAX_VALUE);
  }

  /**
   * As {@link #get}; a block longer than {@code directMaxBytes} is leased from the mapping even if
   * it is not in the page cache.
   */
  private BlockLease get(BlockKey key, int directMaxBytes) {
    Location loc = index.get(key);
    SuperBlock sb = pinOrMiss(key, loc);
    if (sb == null) {
      return BlockLease.miss(key);
    }
    BlockLease lease = loc.storedLength <= directMaxBytes && readsDirect(loc, sb)
        ? leaseDirect(key, loc, sb) : leaseAt(key, loc, sb, true);
    if (lease == null) {
      counters.miss();
      return BlockLease.miss(key);
    }
    loc.hit();
    counters.hit();
    return lease;
  }

  /**
   * Leases each block, as {@link #get} does, in order. The blocks of up to {@link
   * #BATCHED_READ_MAX_BYTES} read past the page cache are read by the IO threads, up to {@link
   * DirectReads#QUEUE_DEPTH} at once, so that one batch keeps several reads in flight, as the
   * mapping's read-ahead would; the others are leased here, longer blocks from the mapping: a
   * batch holds all its leases at once, and as many long buffers would outgrow the pool.
   */
  List<BlockLease> getAll(List<BlockKey> keys) {
    BlockLease[] leases = new BlockLease[keys.size()];
    Semaphore slots = new Semaphore(DirectReads.QUEUE_DEPTH);
    List<CompletableFuture<Void>> pending = new ArrayList<>();
    RuntimeException failure = null;
    try {
      for (int i = 0; i < leases.length; i++) {
        BlockKey key = keys.get(i);
        if (leases.length > 1 && readsDirectInBatch(key)) {
          int at = i;
          slots.acquireUninterruptibly();
          pending.add(direct.run(() -> {
            try {
              leases[at] = get(key);
            } finally {
              slots.release();
            }
          }));
        } else {
          leases[i] = get(key, BATCHED_READ_MAX_BYTES);
        }
      }
    } catch (RuntimeException e) {
      failure = e;
    }
    for (CompletableFuture<Void> p : pending) {
      try {
        p.join();
      } catch (CompletionException e) {
        failure = failure != null ? failure
            : new IllegalStateException("a read failed", e.getCause());
      }
    }
    if (failure != null) {
      for (BlockLease lease : leases) {
        if (lease != null) {
          lease.close();
        }
      }
      throw failure;
    }
    return new ArrayList<>(Arrays.asList(leases));
  }

  /**
   * Whether the block under {@code key} would be read past the page cache now, and is short
   * enough for a batch to read it beside others.
   */
  private boolean readsDirectInBatch(BlockKey key) {
    Location loc = direct == null ? null : index.get(key);
    if (loc == null || loc.storedLength > BATCHED_READ_MAX_BYTES) {
      return false;
    }
    SuperBlock sb = superBlocks.get(loc.superBlockId);
    if (sb == null || !sb.pin()) {
      return false;
    }
    try {
      return readsDirect(loc, sb);
    } finally {
      sb.unpin();
    }
  }

  /**
   * Whether the record at {@code loc} is read past the page cache: a raw record long enough, its
   * payload on a page boundary, in a file that takes direct IO, not all in the page cache.
   */
  private boolean readsDirect(Location loc, SuperBlock sb) {
    return direct != null && loc.encoding == ENCODING_RAW
        && loc.storedLength >= DIRECT_READ_MIN_BYTES && loc.payloadOffset % PAGE == 0
        && sb.directAlignment() > 0 && !sb.inMemory(loc.payloadOffset, loc.storedLength);
  }

  /**
   * A lease on a copy of the raw record at {@code loc} read past the page cache into a pooled
   * buffer, which goes back to the pool when the lease closes; null if the record is damaged or
   * could not be read (the block is then dropped). Lets the caller's pin of {@code sb} go.
   */
  private BlockLease leaseDirect(BlockKey key, Location loc, SuperBlock sb) {
    ByteBuffer buffer = direct.take(loc.storedLength);
    ByteBuffer bytes = null;
    try {
      CRC32C crc = new CRC32C();
      bytes = readDirect(key, loc, sb, buffer, crc::update);
      if (bytes != null && !matches(key, loc, sb, (int) crc.getValue())) {
        bytes = null;
      }
    } finally {
      sb.unpin();
      if (bytes == null) {
        direct.give(buffer);
      }
    }
    if (bytes == null) {
      return null;
    }
    counters.leaseOpened();
    return new DiskLease(key, bytes.asReadOnlyBuffer(), null, OptionalInt.of(loc.payloadCrc), true,
        buffer);
  }

  /**
   * Reads the raw record at {@code loc} of {@code sb}, pinned, into {@code buffer} from {@link
   * DirectReads#take} past the page cache, handing each chunk to {@code chunks} as it arrives;
   * the record's bytes, or null if they could not be read (the block is then dropped).
   */
  private ByteBuffer readDirect(BlockKey key, Location loc, SuperBlock sb, ByteBuffer buffer,
      Consumer<ByteBuffer> chunks) {
    try {
      ByteBuffer bytes = direct.read(sb, loc.payloadOffset, loc.storedLength, buffer, chunks);
      directReadBytes.add(loc.storedLength);
      return bytes;
    } catch (IOException e) {
      corrupt(key, loc, sb, "a read past the page cache failed: " + e.getMessage());
      return null;
    }
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
      GetStatus status = copyAt(key, loc, sb, dst);
      if (status == GetStatus.HIT) {
        loc.hit();
        counters.hit();
      } else if (status == GetStatus.MISS) {
        counters.miss();
      }
      return status;
    } finally {
      sb.unpin();
    }
  }

  /**
   * Copies the block whose record a prefix pin holds at {@code loc} of {@code sb} (pinned by the
   * pin, which keeps its pin) into {@code dst}, checked as {@link #getInto} checks it; counted as
   * the pin was, not again.
   */
  GetStatus readPinned(BlockKey key, Location loc, SuperBlock sb, ByteBuffer dst) {
    return copyAt(key, loc, sb, dst);
  }

  /**
   * Copies the block at {@code loc} of {@code sb}, pinned, into {@code dst}: past the page cache
   * where it is read that way, else from the mapping, checking its checksum on the way (decoding
   * or opening an encoded or sealed record); {@link GetStatus#MISS}, {@code dst} as it was, if the
   * record is damaged (the block is then dropped) or does not open. Counts no hit or miss.
   */
  private GetStatus copyAt(BlockKey key, Location loc, SuperBlock sb, ByteBuffer dst) {
    if (dst.remaining() < loc.rawLength) {
      return GetStatus.BUFFER_TOO_SMALL;
    }
    long start = System.nanoTime();
    if (readsDirect(loc, sb)) {
      ByteBuffer buffer = direct.take(loc.storedLength);
      int from = dst.position();
      try {
        CRC32C crc = new CRC32C();
        if (readDirect(key, loc, sb, buffer, chunk -> copyChecking(chunk, dst, crc)) == null
            || !matches(key, loc, sb, (int) crc.getValue())) {
          dst.position(from);
          return GetStatus.MISS;
        }
      } finally {
        direct.give(buffer);
      }
    } else if (loc.encoding == ENCODING_RAW) {
      ByteBuffer stored = sb.slice(loc.payloadOffset, loc.storedLength);
      if (!copyIfIntact(key, loc, sb, stored, dst)) {
        return GetStatus.MISS;
      }
    } else if (!decodeInto(key, loc, sb, sb.slice(loc.payloadOffset, loc.storedLength), dst)) {
      return GetStatus.MISS;
    }
    loadRate.record(loc.rawLength, System.nanoTime() - start);
    return GetStatus.HIT;
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

  /**
   * Whether the payload at {@code loc} in {@code sb} (pinned) matches its checksum, read as a
   * read of the block would read it (past the page cache if it is not in it), so that checking
   * it leaves the page cache as it was; false if it could not be read. Drops nothing.
   */
  boolean payloadIntact(Location loc, SuperBlock sb) {
    if (!readsDirect(loc, sb)) {
      return Records.payloadIntact(sb, loc);
    }
    ByteBuffer buffer = direct.take(loc.storedLength);
    try {
      CRC32C crc = new CRC32C();
      direct.read(sb, loc.payloadOffset, loc.storedLength, buffer, crc::update);
      return (int) crc.getValue() == loc.payloadCrc;
    } catch (IOException e) {
      log.warn("reading block record at offset {} of {} failed: {}",
          loc.payloadOffset - HEADER_BYTES, sb.path(), e.toString());
      return false;
    } finally {
      direct.give(buffer);
    }
  }

  /** Checks a raw record's checksum; a mismatch drops the block. */
  private boolean intact(BlockKey key, Location loc, SuperBlock sb, ByteBuffer stored) {
    return matches(key, loc, sb, Records.crc(stored));
  }

  /**
   * Copies a raw record into {@code dst} while checking its checksum ({@link #copyChecking}). A
   * mismatch drops the block and puts {@code dst}'s position back.
   */
  private boolean copyIfIntact(BlockKey key, Location loc, SuperBlock sb, ByteBuffer stored,
      ByteBuffer dst) {
    int start = dst.position();
    CRC32C crc = new CRC32C();
    copyChecking(stored, dst, crc);
    if (matches(key, loc, sb, (int) crc.getValue())) {
      return true;
    }
    dst.position(start);
    return false;
  }

  /**
   * Copies {@code from}'s remaining bytes into {@code dst}, adding them to {@code crc}, a
   * cache-sized piece at a time, so the bytes cross the memory bus once rather than once for the
   * check and once for the copy; leaves {@code from} alone.
   */
  private static void copyChecking(ByteBuffer from, ByteBuffer dst, CRC32C crc) {
    ByteBuffer piece = from.duplicate();
    int start = piece.position();
    int end = piece.limit();
    for (int at = start; at < end; at += VERIFY_CHUNK_BYTES) {
      piece.limit(Math.min(end, at + VERIFY_CHUNK_BYTES)).position(at);
      crc.update(piece);
      dst.put(piece.position(at));
    }
  }

  /** Whether a raw record's checksum is {@code actual}; a mismatch drops the block. */
  private boolean matches(BlockKey key, Location loc, SuperBlock sb, int actual) {
    if (actual == loc.payloadCrc) {
      return true;
    }
    corrupt(key, loc, sb, String.format("expected checksum 0x%08x, found 0x%08x", loc.payloadCrc,
        actual));
    return false;
  }

  /** Decodes an encoded record into {@code dst}; a damaged container drops the block. */
  private boolean decodeInto(BlockKey key, Location loc, SuperBlock sb, ByteBuffer stored,
      ByteBuffer dst) {
    if (loc.encoding == ENCODING_SEALED) {
      return openInto(key, loc, sb, stored, dst);
    }
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

  /**
   * Opens the sealed record {@code stored} of {@code loc} into {@code dst}, once its checksum
   * holds; false if it is damaged or does not open, the block then dropped.
   */
  private boolean openInto(BlockKey key, Location loc, SuperBlock sb, ByteBuffer stored,
      ByteBuffer dst) {
    if (!intact(key, loc, sb, stored)) {
      return false;
    }
    long namespace = Records.namespaceTag(sb, loc);
    Sealer sealer = seals == null ? null : seals.forRead(namespace);
    if (sealer != null && sealer.open(key, stored.duplicate(), dst)) {
      return true;
    }
    if (index.remove(key, loc) && seals != null) {
      seals.failed();
      log.debug("dropped block {}: its sealed record at offset {} of {} does not open ({})", key,
          loc.payloadOffset - HEADER_BYTES, sb.path(), sealer == null
              ? "no salt or no sealing for its namespace" : "its tag fails");
    }
    return false;
  }

  /**
   * Drops a block whose record at {@code loc} in {@code sb} is damaged, as {@code detail} says.
   * A record that two threads find damaged at once (a read and the scrub) is dropped and counted
   * once.
   *
   * @return whether this call dropped it
   */
  boolean corrupt(BlockKey key, Location loc, SuperBlock sb, String detail) {
    if (!index.remove(key, loc)) {
      return false; // dropped already, or replaced
    }
    corruptBlocks.increment();
    log.warn("dropped block {}: record at offset {} of {} is damaged: {}", key,
        loc.payloadOffset - HEADER_BYTES, sb.path(), detail);
    return true;
  }

  /**
   * A lease on a mapped record (pinning its super-block), on a decoded copy, or on a copy read past
   * the page cache (holding its pooled buffer).
   */
  private final class DiskLease extends PinnedLease {
    private final ByteBuffer bytes;
    private final SuperBlock pinned;
    /** The pooled buffer a direct read filled, given back on release; or null. */
    private final ByteBuffer pooled;
    private final OptionalInt crc32c;
    /** Whether it counts as open in the statistics: not if it was handed to the listener. */
    private final boolean counted;

    DiskLease(BlockKey key, ByteBuffer bytes, SuperBlock pinned, OptionalInt crc32c,
        boolean counted) {
      this(key, bytes, pinned, crc32c, counted, null);
    }

    DiskLease(BlockKey key, ByteBuffer bytes, SuperBlock pinned, OptionalInt crc32c,
        boolean counted, ByteBuffer pooled) {
      super(key);
      this.bytes = bytes;
      this.pinned = pinned;
      this.pooled = pooled;
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
      if (pooled != null) {
        direct.give(pooled);
      }
    }
  }
}
