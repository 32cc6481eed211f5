package dev.kvcache.disk;

import static dev.kvcache.disk.internal.RecordLayout.*;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.BlockWriter;
import dev.kvcache.CacheHealth;
import dev.kvcache.CacheStats;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.codec.BlockCodec;
import dev.kvcache.codec.BlockEncoder;
import dev.kvcache.codec.CorruptBlockException;
import dev.kvcache.disk.device.StorageDevice;
import dev.kvcache.disk.internal.Checkpoint;
import dev.kvcache.disk.internal.DirectoryLock;
import dev.kvcache.disk.internal.DirectoryState;
import dev.kvcache.disk.internal.Doorkeeper;
import dev.kvcache.disk.internal.FileSpace;
import dev.kvcache.disk.internal.Journal;
import dev.kvcache.disk.internal.JournalEntry;
import dev.kvcache.disk.internal.JournalLayout;
import dev.kvcache.disk.internal.Location;
import dev.kvcache.disk.internal.PartWriter;
import dev.kvcache.disk.internal.PositionedChannel;
import dev.kvcache.disk.internal.RateLimiter;
import dev.kvcache.disk.internal.Records;
import dev.kvcache.disk.internal.SuperBlock;
import dev.kvcache.spi.AbstractBlockWriter;
import dev.kvcache.spi.BlockEvictionListener;
import dev.kvcache.spi.LoadRate;
import dev.kvcache.spi.PinnedLease;
import dev.kvcache.spi.PutChecks;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierCounters;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The disk tier: blocks appended as self-describing records to large super-block files, read
 * back through memory mappings, with a metadata journal and index checkpoints so that a restart
 * finds every block it had (see {@code docs/disk-tier.md}; formats in {@code docs/disk-format.md}).
 *
 * <p>A put writes the caller's bytes straight to their place in the current super-block with a
 * positional write (no staging copy for direct buffers; the JDK copies heap buffers once), then
 * records the block in the journal. A {@link #writer} writes a block that arrives in parts to its
 * place the same way, as the parts come. A lease is a read-only view of the mapped record; a read
 * checks the record's checksum before serving it, and a block whose checksum fails is dropped and
 * reported as a miss. When the files would exceed the capacity, the oldest super-block is dropped.
 *
 * <pre>{@code
 * try (DiskTier disk = DiskTier.open(DiskTierConfig.builder(dir, 100L << 30).build())) {
 *   disk.put(key, block);
 * }
 * }</pre>
 *
 * <p>One tier per directory: a second opener, in this process or another, gets a {@link
 * DirectoryLockedException}.
 *
 * <p><b>Room.</b> The tier's files stay within its capacity and leave {@link
 * DiskTierConfig#minFreeBytes()} free on the file system. A running tier makes room for a new
 * super-block by dropping its oldest ones, but only when that is enough: when space is short
 * because something else filled the file system, it keeps its blocks and refuses puts instead.
 * Opening never drops, truncates or rewrites a super-block for lack of room: a tier that finds
 * none opens degraded ({@link #health()}), serves what it holds, answers puts {@link
 * PutStatus#REJECTED_NO_SPACE}, and takes puts again once space returns. A write that fails (the
 * file system full, an I/O error) loses only the block being written, and is counted ({@link
 * DiskStats#writeFailures()}); the tier reports itself degraded until a write succeeds again.
 *
 * <p><b>Size.</b> This class is past the size the project splits classes at, and is not split
 * yet: recovery, space and roll-over, compaction, the hand-over of evicted blocks, the commit of
 * records, reads and health are each to become a class of their own, over a storage-device seam that every file operation
 * goes through.
 */
public final class DiskTier implements Tier {

  private static final Logger log = LoggerFactory.getLogger(DiskTier.class);
  /** Bytes a read checks and then copies at a time: small enough to stay in the core's cache. */
  private static final int VERIFY_CHUNK_BYTES = 64 << 10;
  /** Written over the parts of a record whose writer was closed without a commit. */
  private static final ByteBuffer ZEROS = ByteBuffer.allocateDirect(64 << 10).asReadOnlyBuffer();

  private final DiskTierConfig config;
  private final Path dir;
  private final StorageDevice device;
  private final DirectoryLock directoryLock;
  private final BlockCodec codec;
  private ConcurrentHashMap<BlockKey, Location> index = new ConcurrentHashMap<>();
  private volatile BlockEvictionListener evictionListener;
  /** Live super-blocks by id, oldest first. */
  private final ConcurrentSkipListMap<Integer, SuperBlock> superBlocks = new ConcurrentSkipListMap<>();
  /** Dropped super-blocks whose files still exist while leases pin them. */
  private final Set<SuperBlock> retiring = ConcurrentHashMap.newKeySet();
  /** Super-blocks written since the last periodic force. */
  private final Set<SuperBlock> dirty = ConcurrentHashMap.newKeySet();
  /** Guards space reservation in the active super-block and its roll-over. */
  private final Object writeLock = new Object();
  /** Makes journal order the order of index updates; guards journal rotation. */
  private final Object commitLock = new Object();
  /** Makes syncs one at a time. */
  private final Object syncLock = new Object();
  private final AtomicBoolean checkpointing = new AtomicBoolean();
  private final AtomicLong sequence = new AtomicLong();
  private final AtomicInteger nextSuperBlockId = new AtomicInteger(1);
  private final ScheduledExecutorService syncer;
  private final Reclaimer reclaimer;
  /** Keys put once, for {@link Admission#SEEN_BEFORE}; null otherwise. */
  private final Doorkeeper doorkeeper;
  private final FileSpace space;
  /** {@link DiskTierConfig#minFreeBytes()}, or its default for this file system. */
  private final long minFreeBytes;
  private volatile SuperBlock active;
  /** Why there is no active super-block (no room for one); null while there is one. */
  private volatile String noRoom;
  /** The last write's failure, until a write succeeds; null when the last write succeeded. */
  private volatile String writeFailure;
  /** The journal; null while it cannot be created (a full file system), and then no puts. */
  private volatile Journal journal;
  /** The generation of the journal to create when there is none. */
  private long nextJournalGeneration;
  private volatile long checkpointBytes;
  private volatile boolean closed;

  private final TierCounters counters = new TierCounters();
  private final LoadRate loadRate = new LoadRate();
  private final LongAdder corruptBlocks = new LongAdder();
  private final LongAdder unchangedPuts = new LongAdder();
  private final LongAdder bytesWritten = new LongAdder();
  private final LongAdder superBlocksDropped = new LongAdder();
  private final LongAdder blocksRewritten = new LongAdder();
  private final LongAdder bytesRewritten = new LongAdder();
  private final LongAdder writeFailures = new LongAdder();
  private final LongAdder syncs = new LongAdder();

  private DiskTier(DiskTierConfig config, DirectoryLock directoryLock, FileSpace space)
      throws IOException {
    this.config = config;
    this.dir = config.directory();
    this.device = config.device();
    this.directoryLock = directoryLock;
    this.space = space;
    this.minFreeBytes = config.minFreeBytes() >= 0
        ? config.minFreeBytes()
        : DiskTierConfig.defaultMinFreeBytes(space.totalBytes());
    this.codec = config.codec();
    this.syncer = config.syncPolicy() == SyncPolicy.PERIODIC
        ? Executors.newSingleThreadScheduledExecutor(r -> {
          Thread t = new Thread(r, "kvcache-disk-sync");
          t.setDaemon(true);
          return t;
        })
        : null;
    this.reclaimer = new Reclaimer(this, config.reclaimBytesPerSecond());
    this.doorkeeper = config.admission() == Admission.SEEN_BEFORE
        ? new Doorkeeper((int) Math.min(1 << 26, 8 * Math.max(1, config.capacityBytes() >> 16)))
        : null;
  }

  /**
   * Opens (or creates) the tier in {@code config.directory()}, recovering what a previous run
   * left: the last checkpoint plus the journal after it, or, if they are missing or damaged, a
   * scan of every super-block.
   *
   * <p>A tier that finds no room for a new super-block (the file system is fuller than the
   * free-space floor allows) opens anyway, degraded: see the class description.
   *
   * @throws DirectoryLockedException if the directory is already open
   * @throws IOException if the directory cannot be created or read, or holds files of an unknown
   *     format version
   */
  public static DiskTier open(DiskTierConfig config) throws IOException {
    return open(config, null);
  }

  /** As {@link #open(DiskTierConfig)}, with the file system's space told by {@code space}. */
  static DiskTier open(DiskTierConfig config, FileSpace space) throws IOException {
    Objects.requireNonNull(config, "config");
    StorageDevice device = config.device();
    device.prepareDirectory(config.directory());
    DirectoryLock lock = DirectoryLock.acquire(device, config.directory());
    DiskTier tier;
    try {
      tier = new DiskTier(config, lock, space != null ? space : FileSpace.of(device, config.directory()));
    } catch (IOException | RuntimeException e) {
      lock.close();
      throw e;
    }
    try {
      tier.recover();
      tier.reclaimer.start();
      if (tier.syncer != null) {
        long every = config.syncIntervalMillis();
        tier.syncer.scheduleWithFixedDelay(tier::periodicSync, every, every, TimeUnit.MILLISECONDS);
      }
      return tier;
    } catch (IOException | RuntimeException e) {
      tier.closeFiles();
      throw e;
    }
  }

  // ---------------------------------------------------------------- recovery

  private void recover() throws IOException {
    long started = System.nanoTime();
    DirectoryState state = DirectoryState.load(device, dir, true);
    for (Path damaged : state.damagedSuperBlocks) {
      log.warn("{}: damaged super-block header, the file holds nothing usable: deleting it", damaged);
      device.delete(damaged);
    }
    for (SuperBlock sb : state.droppedSuperBlocks) {
      sb.drop(); // its drop was journalled but the file survived a crash
    }
    superBlocks.putAll(state.superBlocks);
    index = state.index;
    sequence.set(state.maxSequence);
    nextSuperBlockId.set(state.nextSuperBlockId);
    for (Location loc : index.values()) {
      superBlocks.get(loc.superBlockId).liveBytes().addAndGet(loc.recordBytes());
    }
    nextJournalGeneration = state.nextGeneration;
    // after a clean close the checkpoint is all there is, and it stays valid as it is
    boolean checkpointCurrent = state.checkpointLoaded && state.journals.isEmpty()
        && state.rolledForward == 0 && state.droppedSuperBlocks.isEmpty()
        && state.damagedSuperBlocks.isEmpty();
    if (checkpointCurrent) {
      checkpointBytes = Checkpoint.size(device, dir); // a clean shutdown's
    } else {
      try {
        // what a crash left may be in the page cache alone: on the device before the checkpoint
        checkpointBytes = Checkpoint.write(device, dir, state.nextGeneration, sequence.get(),
            index.entrySet(), () -> {
              for (SuperBlock sb : superBlocks.values()) {
                sb.force();
              }
            });
        for (Path replayed : state.journals.values()) {
          device.delete(replayed); // the checkpoint covers them now
        }
      } catch (IOException e) { // a full file system: the journals stay, for the next open
        log.warn("{}: cannot write a checkpoint ({}); the next open replays the journals again",
            dir, e.toString());
      }
    }
    synchronized (writeLock) {
      // nothing stored is dropped to make room while opening
      if (startJournal()) {
        rollOver(false);
      }
    }
    log.info("opened disk tier {}: {} blocks in {} super-blocks{}, {} ms", dir, index.size(),
        superBlocks.size(), state.rebuilt ? " (index rebuilt from the records)" : "",
        (System.nanoTime() - started) / 1_000_000);
    if (noRoom != null) {
      log.warn("disk tier {} opened degraded, refusing puts until there is room: {}", dir, noRoom);
    }
  }

  // ---------------------------------------------------------------- writes

  @Override
  public PutStatus put(BlockKey key, ByteBuffer src) {
    Objects.requireNonNull(src, "src");
    requireOpen();
    int length = src.remaining();
    if (!PutChecks.fits(key, length, config.maxBlockBytes(), counters)) {
      return PutStatus.REJECTED_TOO_LARGE;
    }
    if (doorkeeper != null && !index.containsKey(key) && !doorkeeper.seenOrRemember(key)) {
      counters.put();
      return PutStatus.NOT_ADMITTED;
    }
    ByteBuffer data = src.duplicate();
    int rawCrc = codec == null ? Records.crc(data) : 0;
    if (codec == null && isUnchanged(key, data, rawCrc)) {
      unchangedPuts.increment();
      counters.put();
      return PutStatus.STORED;
    }
    try {
      long reserve = codec == null ? length : codec.maxEncodedLength(length);
      Reservation r = reserve(reserve);
      if (r == null) {
        counters.rejection();
        return PutStatus.REJECTED_NO_SPACE;
      }
      try {
        int stored;
        int payloadCrc;
        int encoding;
        try {
          if (codec == null) {
            r.sb.write(data, r.payload);
            stored = length;
            payloadCrc = rawCrc;
            encoding = ENCODING_RAW;
          } else {
            PositionedChannel out = new PositionedChannel(r.sb, r.payload);
            codec.encode(data, out);
            stored = (int) out.written();
            payloadCrc = out.crc();
            encoding = ENCODING_CONTAINER;
            giveBack(r, stored);
          }
        } catch (IOException e) {
          abandon(r);
          r.sb.unpin();
          throw e;
        }
        return completeRecord(r, r.sequence, key, length, stored, payloadCrc, encoding);
      } finally {
        r.sb.finishRecord();
      }
    } catch (IOException e) {
      return writeFailed(key, e);
    }
  }

  /**
   * Completes a record whose payload is written into {@code r}: writes its header, unpins the
   * super-block, journals the record and indexes it.
   *
   * @return {@link PutStatus#STORED}, or {@link PutStatus#NOT_ADMITTED} if the super-block was
   *     dropped to make room while the payload was being written
   * @throws IOException if the header or the journal entry cannot be written; the reservation is
   *     then given back
   */
  private PutStatus completeRecord(Reservation r, long seq, BlockKey key, int length, int stored,
      int payloadCrc, int encoding) throws IOException {
    try {
      r.sb.write(Records.header(KIND_BLOCK, encoding, seq, key, length, stored, payloadCrc),
          r.payload - HEADER_BYTES);
    } catch (IOException e) {
      abandon(r);
      throw e;
    } finally {
      r.sb.unpin();
    }
    if (superBlocks.containsKey(r.sb.id())) {
      dirty.add(r.sb); // now that its bytes are written: the next sync forces them
    }
    Location loc = new Location(r.sb.id(), (int) r.payload, stored, length, payloadCrc, encoding,
        seq, 0);
    boolean[] installed = {false};
    commit(JournalEntry.put(key, loc, 0, config.syncPolicy() == SyncPolicy.ALWAYS), r.sb,
        () -> installed[0] = install(key, loc));
    bytesWritten.add(HEADER_BYTES + stored + JournalLayout.ENTRY_BYTES);
    counters.put();
    if (writeFailure != null) {
      writeFailure = null;
      log.info("writes to the disk tier in {} succeed again", dir);
    }
    return installed[0] ? PutStatus.STORED : PutStatus.NOT_ADMITTED;
  }

  /**
   * A writer straight into the block's record: room is reserved in the active super-block when it
   * opens, the parts are written to their place there as they come, and the commit writes the
   * record's header and journals it. No buffer of the whole block lies in between: small parts
   * are gathered into positional writes of 256 KiB ({@link PartWriter}), or encoded chunk by chunk
   * when the tier stores blocks encoded.
   *
   * <p>The block's sequence is taken at the commit, so a put of the same key that completes while
   * the writer is open is replaced by the commit, as it would be by a later put. A writer that is
   * closed without a commit zeroes what it wrote before giving its room back, so that a scan of
   * the records never mistakes its bytes for a record.
   */
  @Override
  public BlockWriter writer(BlockKey key, int length) {
    requireOpen();
    if (!PutChecks.fits(key, length, config.maxBlockBytes(), counters)) {
      return BlockWriter.rejected(key, length, PutStatus.REJECTED_TOO_LARGE);
    }
    if (doorkeeper != null && !index.containsKey(key) && !doorkeeper.seenOrRemember(key)) {
      return new UnadmittedWriter(key, length);
    }
    try {
      Reservation r = reserve(codec == null ? length : codec.maxEncodedLength(length));
      if (r != null) {
        return new RecordWriter(key, length, r);
      }
      counters.rejection();
    } catch (IOException e) {
      writeFailed(key, e);
    }
    return BlockWriter.rejected(key, length, PutStatus.REJECTED_NO_SPACE);
  }

  /** The writer of a block's record in a reservation; see {@link #writer}. */
  private final class RecordWriter extends AbstractBlockWriter {
    private final Reservation r;
    private final PositionedChannel out;
    private final PartWriter parts;
    private final BlockEncoder encoder;
    private IOException failure;

    RecordWriter(BlockKey key, int length, Reservation r) throws IOException {
      super(key, length);
      this.r = r;
      // a raw record's checksum is the one the writer computes as the parts come in
      this.out = new PositionedChannel(r.sb, r.payload, codec != null);
      this.parts = codec == null ? new PartWriter(out) : null;
      try {
        this.encoder = codec == null ? null : codec.encoder(length, out);
      } catch (IOException e) {
        abandon(r);
        r.sb.unpin();
        r.sb.finishRecord();
        throw e;
      }
    }

    @Override
    protected void copyIn(ByteBuffer src, int offset) {
      if (failure != null) {
        return; // the commit reports it
      }
      try {
        if (encoder == null) {
          parts.write(src);
        } else {
          encoder.write(src.duplicate());
        }
      } catch (IOException e) {
        failure = e;
      }
    }

    @Override
    protected PutStatus publish() {
      try {
        return publishRecord();
      } finally {
        r.sb.finishRecord();
      }
    }

    private PutStatus publishRecord() {
      int stored;
      try {
        if (failure != null) {
          throw failure;
        }
        requireOpen();
        if (encoder == null) {
          parts.flush();
          parts.close();
        }
        stored = (int) (encoder == null ? out.written() : encoder.finish());
      } catch (IOException e) {
        discardRecord();
        return writeFailed(key(), e);
      } catch (RuntimeException e) {
        discardRecord();
        throw e;
      }
      if (encoder != null) {
        giveBack(r, stored);
      }
      try {
        return completeRecord(r, sequence.incrementAndGet(), key(), length(), stored,
            encoder == null ? crc32c().getAsInt() : out.crc(),
            encoder == null ? ENCODING_RAW : ENCODING_CONTAINER);
      } catch (IOException e) {
        return writeFailed(key(), e);
      }
    }

    @Override
    protected void discard() {
      try {
        discardRecord();
      } finally {
        r.sb.finishRecord();
      }
    }

    /** Zeroes what was written and gives the room back. */
    private void discardRecord() {
      if (encoder != null) {
        encoder.close();
      } else {
        parts.close();
      }
      try {
        for (long at = r.payload, end = r.payload + out.written(); at < end; ) {
          int n = (int) Math.min(ZEROS.capacity(), end - at);
          r.sb.write(ZEROS.duplicate().limit(n), at);
          at += n;
        }
      } catch (IOException e) {
        log.debug("zeroing the abandoned record of {}: {}", key(), e.toString());
      }
      abandon(r);
      r.sb.unpin();
    }
  }

  /** A writer whose block the doorkeeper turned away: it takes the bytes and keeps none. */
  private final class UnadmittedWriter extends AbstractBlockWriter {
    UnadmittedWriter(BlockKey key, int length) {
      super(key, length, false); // keeps nothing to checksum
    }

    @Override
    protected void copyIn(ByteBuffer src, int offset) {}

    @Override
    protected PutStatus publish() {
      counters.put();
      return PutStatus.NOT_ADMITTED;
    }

    @Override
    protected void discard() {}
  }

  /**
   * A put that failed to write: counted, and the tier reports itself degraded until a write
   * succeeds. Logged as a warning when writes start failing, then only at debug level.
   */
  private PutStatus writeFailed(BlockKey key, IOException e) {
    writeFailures.increment();
    counters.rejection();
    if (writeFailure == null) {
      log.warn("put of {} failed, and puts fail until a write to {} succeeds: {}", key, dir,
          e.toString());
    } else {
      log.debug("put of {} failed: {}", key, e.toString());
    }
    writeFailure = "writes to " + dir + " fail: " + e.getMessage();
    return PutStatus.REJECTED_NO_SPACE;
  }

  /** Whether the block stored under {@code key} already holds exactly these bytes. */
  private boolean isUnchanged(BlockKey key, ByteBuffer data, int crc) {
    Location cur = index.get(key);
    if (cur == null || cur.encoding != ENCODING_RAW || cur.rawLength != data.remaining()
        || cur.payloadCrc != crc) {
      return false;
    }
    SuperBlock sb = superBlocks.get(cur.superBlockId);
    if (sb == null || !sb.pin()) {
      return false;
    }
    try {
      return sb.slice(cur.payloadOffset, cur.storedLength).mismatch(data) < 0;
    } finally {
      sb.unpin();
    }
  }

  /**
   * Where a record goes: a pinned super-block, where the reservation starts (the previous end of
   * the super-block), the payload offset, its end, and the record's sequence.
   */
  private static final class Reservation {
    final SuperBlock sb;
    final long start;
    final long payload;
    final long end;
    final long sequence;

    Reservation(SuperBlock sb, long start, long payload, long end, long sequence) {
      this.sb = sb;
      this.start = start;
      this.payload = payload;
      this.end = end;
      this.sequence = sequence;
    }
  }

  /**
   * Creates the journal if there is none yet (it could not be created when the tier opened). Holds
   * {@link #writeLock}.
   *
   * @return false, with {@link #noRoom} saying why, if it still cannot be created
   */
  private boolean startJournal() {
    if (journal != null) {
      return true;
    }
    try {
      synchronized (commitLock) {
        journal = Journal.create(device, dir, nextJournalGeneration);
      }
      if (active != null) {
        noRoom = null; // the journal was all that was missing
      }
      return true;
    } catch (IOException e) {
      if (noRoom == null) {
        log.warn("disk tier {} refuses puts and deletes until its journal can be created: {}", dir,
            e.toString());
      }
      noRoom = "cannot create the journal in " + dir + ": " + e.getMessage();
      return false;
    }
  }

  /** Reserves room for a record of {@code stored} payload bytes; null if there is no room. */
  private Reservation reserve(long stored) throws IOException {
    synchronized (writeLock) {
      requireOpen();
      if (!startJournal()) {
        return null;
      }
      if (active == null || payloadOffset(active.end(), stored) + stored > active.sizeBytes()) {
        if (!rollOver(true)) {
          return null; // no active super-block until a later put finds room
        }
      }
      long start = active.end();
      long payload = payloadOffset(start, stored);
      active.end(payload + stored);
      SuperBlock sb = active;
      if (!sb.pin()) {
        throw new IllegalStateException("the active super-block is unmapped");
      }
      long seq = sequence.incrementAndGet();
      sb.recordSequence(seq); // a writer's later sequence keeps this a lower bound
      sb.startRecord(); // every caller finishes it, once
      return new Reservation(sb, start, payload, payload + stored, seq);
    }
  }

  /** After encoding into {@code r}, gives back the unused tail if nothing was reserved after it. */
  private void giveBack(Reservation r, int stored) {
    synchronized (writeLock) {
      if (active == r.sb && active.end() == r.end) {
        active.end(r.payload + stored);
      }
    }
  }

  /**
   * After a failed write into {@code r}, gives the whole reservation back if nothing was reserved
   * after it, so no unwritten gap is left where scans read (on a full tmpfs, reading a gap
   * through the mapping faults).
   */
  private void abandon(Reservation r) {
    synchronized (writeLock) {
      if (active == r.sb && active.end() == r.end) {
        active.end(r.start);
      }
    }
  }

  /**
   * Seals the active super-block and starts a new one. With {@code mayDrop}, the oldest
   * super-blocks are dropped while the files would exceed the capacity, and, if that is enough to
   * get there, while the file system would have less than the free-space floor left; a shortage
   * that dropping every super-block could not end (something else filled the file system) drops
   * nothing. Without {@code mayDrop} (while opening) nothing is dropped. Holds {@link #writeLock}.
   *
   * @return false if no room can be made; {@link #noRoom} then says why
   */
  private boolean rollOver(boolean mayDrop) throws IOException {
    long size = config.superBlockBytes();
    SuperBlock sealed = active;
    if (sealed != null) {
      long used = alignUp(sealed.end(), PAGE);
      sealed.end(used);
      sealed.truncate(used); // its records stay dirty until the sync policy forces them
      sealed.seal();
      active = null;
    }
    if (!mayDrop || shortOfSpace(size) > droppableBytes()) {
      if (usedBytes() + size > config.capacityBytes() || shortOfSpace(size) > 0) {
        return noRoom(size);
      }
    }
    while (usedBytes() + size > config.capacityBytes() || shortOfSpace(size) > 0) {
      Map.Entry<Integer, SuperBlock> oldest = superBlocks.firstEntry();
      if (oldest == null) {
        return noRoom(size);
      }
      dropSuperBlock(oldest.getValue());
      reapRetired();
      if (usedBytes() + size <= config.capacityBytes() && !retiring.isEmpty()
          && shortOfSpace(size) > 0) {
        return noRoom(size); // the space is pinned by leases
      }
    }
    SuperBlock sb = SuperBlock.create(device, dir, nextSuperBlockId.getAndIncrement(), size);
    if (config.syncPolicy() != SyncPolicy.NONE) {
      device.forceDirectory(dir); // the new file's name must survive a power loss too
    }
    superBlocks.put(sb.id(), sb);
    active = sb;
    if (noRoom != null) {
      noRoom = null;
      log.info("disk tier {} has room again and takes puts", dir);
    }
    if (mayDrop) {
      reclaimer.wake(); // not while opening: see Reclaimer
    }
    return true;
  }

  /** Bytes the file system lacks for a new super-block of {@code size} above the floor. */
  private long shortOfSpace(long size) throws IOException {
    return size + minFreeBytes - space.usableBytes();
  }

  /** Bytes of file system space that dropping every sealed super-block would give back. */
  private long droppableBytes() {
    long bytes = 0;
    for (SuperBlock sb : superBlocks.values()) {
      bytes += alignUp(sb.end(), PAGE);
    }
    return bytes;
  }

  /** Notes that no super-block of {@code size} can be started, and why; false. */
  private boolean noRoom(long size) throws IOException {
    String why = "no room for a new super-block of " + size + " bytes: the files take "
        + usedBytes() + " of the " + config.capacityBytes() + " bytes of capacity, and the file"
        + " system has " + space.usableBytes() + " bytes free, " + minFreeBytes + " of which are"
        + " kept free (minFreeBytes)";
    if (noRoom == null && !closed) {
      log.warn("disk tier {} refuses puts until there is room: {}", dir, why);
    }
    noRoom = why;
    return false;
  }

  /**
   * Drops a super-block: its blocks leave the index, the journal records the drop durably, and
   * the file is deleted once no lease pins it.
   */
  private void dropSuperBlock(SuperBlock victim) throws IOException {
    if (!superBlocks.containsKey(victim.id()) || !victim.pin()) {
      return; // dropped already
    }
    // its blocks, found from its record headers: a sealed super-block gets no new index entries.
    // The pin holds its file until they are handed over, even if another thread drops it meanwhile
    List<Map.Entry<BlockKey, Location>> indexed = new ArrayList<>();
    List<Map.Entry<BlockKey, Location>> evicted = new ArrayList<>();
    long ticket;
    Journal j;
    try {
      Records.scan(victim, victim.end(), (kind, key, loc) -> {
        Location cur = index.get(key);
        if (kind == KIND_BLOCK && cur != null && cur.superBlockId == victim.id()
            && cur.payloadOffset == loc.payloadOffset) {
          indexed.add(Map.entry(key, cur));
        }
      });
      synchronized (commitLock) {
        j = journal;
        ticket = j.append(JournalEntry.drop(victim.id()));
        for (Map.Entry<BlockKey, Location> e : indexed) {
          if (index.remove(e.getKey(), e.getValue())) {
            counters.eviction();
            evicted.add(e); // by this thread alone, if two drop the super-block at once
          }
        }
      }
      handOverEvicted(victim, evicted);
    } finally {
      victim.unpin();
    }
    j.awaitDurable(ticket);
    if (superBlocks.remove(victim.id()) == null) {
      return;
    }
    dirty.remove(victim);
    retiring.add(victim);
    superBlocksDropped.increment();
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
      BlockLease lease = leaseAt(key, e.getValue(), victim, false);
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

  /**
   * Hands the live blocks of each super-block dropped to make room to {@code listener}, as leases
   * that keep the super-block's file (though no longer its place in the capacity) until closed.
   */
  @Override
  public boolean onEviction(BlockEvictionListener listener) {
    this.evictionListener = Objects.requireNonNull(listener, "listener");
    return true;
  }

  private void reapRetired() {
    retiring.removeIf(SuperBlock::isReleased);
  }

  /** Live fraction under which a sealed super-block is compacted. */
  private static final double COMPACT_BELOW_LIVE_FRACTION = 0.25;

  /**
   * One step of background reclamation: compacts the sealed super-block with the least live data
   * if that is under a quarter, else, once the files pass the high watermark (two super-blocks
   * below the capacity), reclaims the oldest, rewriting forward its blocks read since written.
   * A compaction that finds no room to move a live block stops and keeps the super-block: only
   * reclaiming the oldest (eviction by age) lets live blocks go. Unless the sync policy is {@code
   * NONE}, every record written so far is forced before the super-block is dropped: the moved
   * ones, and the newer copies that made its other records dead, so that a power loss cannot take
   * a key's newer copy after the drop took the older one.
   *
   * @return whether there was anything to do
   */
  boolean reclaimOnce(RateLimiter limiter, BooleanSupplier stop) throws IOException {
    if (closed || journal == null) {
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
    if (victim == null && usedBytes() > config.capacityBytes() - 2 * config.superBlockBytes()) {
      Map.Entry<Integer, SuperBlock> oldest = superBlocks.firstEntry();
      victim = oldest == null || !oldest.getValue().isSealed()
          || oldest.getValue().hasUnfinishedRecords() ? null : oldest.getValue();
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
        if (stop.getAsBoolean() || closed) {
          return true;
        }
        limiter.acquire(m.getValue().recordBytes());
        if (!moveForward(m.getKey(), m.getValue(), v) && compact) {
          return false; // no room: the super-block stays until there is
        }
      }
      carryForward(tombstones);
      if (config.syncPolicy() != SyncPolicy.NONE) {
        forceDirty(); // before the drop's journal entry is durable
      }
    } finally {
      victim.unpin();
    }
    if (!closed) {
      dropSuperBlock(victim);
    }
    return true;
  }

  /**
   * Rewrites a live block from {@code from} into the active super-block, keeping its sequence
   * number (so a newer put of the key still wins on replay). Journalled only if the index still
   * pointed at the old copy.
   *
   * @return false if there was no room to move it (it stays where it is); true if it was moved,
   *     or was damaged and dropped
   */
  private boolean moveForward(BlockKey key, Location cur, SuperBlock from) throws IOException {
    if (!Records.payloadIntact(from, cur)) {
      corrupt(key, cur, from, "checksum mismatch found while moving it forward");
      return true;
    }
    Reservation r = reserve(cur.storedLength);
    if (r == null) {
      return false;
    }
    try {
      return moveInto(r, key, cur, from);
    } finally {
      r.sb.finishRecord();
    }
  }

  /** The rest of {@link #moveForward}, into reservation {@code r}. */
  private boolean moveInto(Reservation r, BlockKey key, Location cur, SuperBlock from)
      throws IOException {
    r.sb.recordSequence(cur.sequence);
    try {
      if (r.sb == from) {
        return true; // cannot happen: the victim is never the active super-block
      }
      r.sb.write(from.slice(cur.payloadOffset, cur.storedLength), r.payload);
      r.sb.write(Records.header(KIND_BLOCK, cur.encoding, cur.sequence, key,
          Records.namespaceTag(from, cur), cur.rawLength, cur.storedLength, cur.payloadCrc),
          r.payload - HEADER_BYTES);
    } finally {
      r.sb.unpin();
    }
    dirty.add(r.sb);
    Location moved = new Location(r.sb.id(), (int) r.payload, cur.storedLength, cur.rawLength,
        cur.payloadCrc, cur.encoding, cur.sequence, 0);
    boolean always = config.syncPolicy() == SyncPolicy.ALWAYS;
    if (always) {
      r.sb.force(); // before its entry can reach the device
    }
    long ticket = -1;
    Journal j;
    synchronized (commitLock) {
      j = journal;
      if (index.replace(key, cur, moved)) {
        ticket = j.append(JournalEntry.put(key, moved, 0, always));
        live(cur, -1);
        live(moved, +1);
      }
    }
    bytesWritten.add(moved.recordBytes());
    if (ticket >= 0) {
      blocksRewritten.increment();
      bytesRewritten.add(moved.recordBytes());
      if (always) {
        j.awaitDurable(ticket);
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
   * Rewrites tombstones from a super-block about to be dropped into the active one, keeping their
   * sequence numbers, so that a deleted block whose record outlives its tombstone's super-block
   * stays deleted in a rebuild from the records. The journal and the checkpoint already have the
   * deletes: nothing is journalled.
   */
  private void carryForward(List<Map.Entry<BlockKey, Long>> tombstones) throws IOException {
    for (Map.Entry<BlockKey, Long> t : tombstones) {
      Reservation r = reserve(0);
      if (r == null) {
        break; // no room: only a rebuild from the records could bring those blocks back
      }
      try {
        r.sb.recordSequence(t.getValue());
        r.sb.write(Records.header(KIND_TOMBSTONE, ENCODING_RAW, t.getValue(), t.getKey(), 0, 0, 0),
            r.payload - HEADER_BYTES);
      } finally {
        r.sb.unpin();
        r.sb.finishRecord(); // a tombstone is not indexed
      }
      bytesWritten.add(HEADER_BYTES);
      dirty.add(r.sb);
    }
  }

  /**
   * Records a change in the journal and applies it to the index, in the same order for both. Under
   * {@link SyncPolicy#ALWAYS} the record in {@code written} is forced before the entry is appended
   * (so that no journal force, another put's included, makes the entry durable before its record),
   * and the entry is awaited on the journal it went to: a checkpoint may start the next one
   * meanwhile.
   */
  private void commit(ByteBuffer entry, SuperBlock written, Runnable apply) throws IOException {
    boolean always = config.syncPolicy() == SyncPolicy.ALWAYS;
    if (always && written != null) {
      written.force();
    }
    long ticket;
    Journal j;
    synchronized (commitLock) {
      j = journal;
      ticket = j.append(entry);
      apply.run();
    }
    if (always) {
      j.awaitDurable(ticket);
    }
    if (j.sizeBytes() > config.checkpointJournalBytes()) {
      try {
        checkpoint();
      } catch (IOException e) { // the change is journalled: the journal just grows on
        log.warn("{}: cannot write a checkpoint: {}", dir, e.toString());
      }
    }
  }

  /**
   * Indexes {@code loc} under {@code key} unless a newer record is there already, or its
   * super-block was dropped while the record was being written (then it counts as evicted).
   *
   * @return false if the super-block was dropped
   */
  private boolean install(BlockKey key, Location loc) {
    if (!superBlocks.containsKey(loc.superBlockId)) {
      counters.eviction();
      return false;
    }
    Location[] replaced = {null};
    Location now = index.merge(key, loc, (cur, nu) -> {
      if (nu.sequence > cur.sequence) {
        replaced[0] = cur;
        return nu;
      }
      return cur;
    });
    if (now == loc) {
      live(loc, +1);
    }
    if (replaced[0] != null) {
      live(replaced[0], -1);
    }
    return true;
  }

  private void live(Location loc, int sign) {
    SuperBlock sb = superBlocks.get(loc.superBlockId);
    if (sb != null) {
      sb.liveBytes().addAndGet(sign * loc.recordBytes());
    }
  }

  @Override
  public boolean delete(BlockKey key) {
    Objects.requireNonNull(key, "key");
    requireOpen();
    Location cur = index.get(key);
    if (cur == null) {
      return false;
    }
    synchronized (writeLock) {
      if (!startJournal()) {
        throw new UncheckedIOException("could not journal the delete of " + key + ": " + noRoom,
            new IOException(noRoom));
      }
    }
    try {
      Reservation r = reserve(0);
      if (r != null) {
        try {
          r.sb.write(Records.header(KIND_TOMBSTONE, ENCODING_RAW, r.sequence, key, 0, 0, 0),
              r.payload - HEADER_BYTES);
        } finally {
          r.sb.unpin();
          r.sb.finishRecord(); // a tombstone is not indexed
        }
        dirty.add(r.sb);
      }
      long seq = r != null ? r.sequence : sequence.incrementAndGet();
      boolean[] removed = {false};
      commit(JournalEntry.delete(key, seq), r != null ? r.sb : null, () ->
          index.computeIfPresent(key, (k, loc) -> {
            if (loc.sequence < seq) {
              removed[0] = true;
              live(loc, -1);
              return null;
            }
            return loc;
          }));
      bytesWritten.add(HEADER_BYTES + JournalLayout.ENTRY_BYTES);
      if (removed[0]) {
        counters.delete();
      }
      return removed[0];
    } catch (IOException e) {
      throw new UncheckedIOException("could not journal the delete of " + key + " in " + dir, e);
    }
  }

  /**
   * Forces every block stored so far, and its journal entry, to the device: after it returns, a
   * power loss loses none of them, whatever the {@link SyncPolicy}.
   */
  public void sync() throws IOException {
    requireOpen();
    synchronized (syncLock) { // one at a time: a sync entry must not pass a force still under way
      Journal j = journal;
      long covered = j == null ? 0 : j.sizeBytes();
      forceDirty();
      if (j != null) {
        synchronized (commitLock) {
          if (journal == j) { // else a checkpoint retired it, and holds all it said
            j.append(JournalEntry.sync(covered));
          }
        }
        j.force();
      }
    }
    syncs.increment();
  }

  /**
   * Forces every super-block written since it was last forced: every record whose journal entry
   * was appended before this started is then on the device.
   */
  private void forceDirty() throws IOException {
    for (SuperBlock sb : superBlocks.values()) {
      if (dirty.remove(sb)) {
        try {
          sb.force();
        } catch (IOException e) {
          dirty.add(sb);
          throw e;
        }
      }
    }
  }

  private void periodicSync() {
    try {
      if (!closed) {
        sync();
      }
    } catch (IOException | RuntimeException e) {
      if (!closed) {
        log.warn("periodic sync of {} failed: {}", dir, e.toString());
      }
    }
  }

  /**
   * Writes a checkpoint of the index and starts a new journal generation. The old journal is
   * retired once the checkpoint is durable: it holds nothing the checkpoint lacks, so a put still
   * waiting on it returns.
   */
  private void checkpoint() throws IOException {
    if (!checkpointing.compareAndSet(false, true)) {
      return;
    }
    try {
      Journal old;
      long next;
      boolean durable = config.syncPolicy() != SyncPolicy.NONE;
      if (durable) {
        forceDirty(); // most of it, before commits wait for the rest
      }
      synchronized (commitLock) {
        old = journal;
        if (durable) {
          // the old journal whole on the device before any entry of the next one: until the
          // checkpoint is in place, recovery replays both, and a drop in the next one must not
          // outlive the put in the old one that made the dropped copy dead
          forceDirty();
          old.force();
        }
        next = old.generation() + 1;
        journal = Journal.create(device, dir, next);
      }
      checkpointBytes = Checkpoint.write(device, dir, next, sequence.get(), index.entrySet(),
          this::forceDirty);
      old.retire();
      device.delete(old.path());
    } finally {
      checkpointing.set(false);
    }
  }

  // ---------------------------------------------------------------- reads

  @Override
  public BlockLease get(BlockKey key) {
    Objects.requireNonNull(key, "key");
    requireOpen();
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
  private BlockLease leaseAt(BlockKey key, Location loc, SuperBlock sb, boolean counted) {
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

  @Override
  public GetStatus getInto(BlockKey key, ByteBuffer dst) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(dst, "dst");
    if (dst.isReadOnly()) {
      throw new ReadOnlyBufferException();
    }
    requireOpen();
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
    corrupt(key, loc, sb, String.format("expected checksum 0x%08x, found 0x%08x", loc.payloadCrc, actual));
    return false;
  }

  /**
   * Copies a raw record into {@code dst} while checking its checksum, a cache-sized chunk at a
   * time, so the bytes cross the memory bus once rather than once for the check and once for the
   * copy. A mismatch drops the block and puts {@code dst}'s position back.
   */
  private boolean copyIfIntact(BlockKey key, Location loc, SuperBlock sb, ByteBuffer stored, ByteBuffer dst) {
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
    corrupt(key, loc, sb, String.format("expected checksum 0x%08x, found 0x%08x", loc.payloadCrc, actual));
    return false;
  }

  /** Decodes an encoded record into {@code dst}; a damaged container drops the block. */
  private boolean decodeInto(BlockKey key, Location loc, SuperBlock sb, ByteBuffer stored, ByteBuffer dst) {
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

  private void corrupt(BlockKey key, Location loc, SuperBlock sb, String detail) {
    corruptBlocks.increment();
    if (index.remove(key, loc)) {
      live(loc, -1);
    }
    log.warn("dropped block {}: record at offset {} of {} is damaged: {}", key,
        loc.payloadOffset - HEADER_BYTES, sb.path(), detail);
  }

  @Override
  public boolean contains(BlockKey key) {
    Objects.requireNonNull(key, "key");
    requireOpen();
    return index.containsKey(key);
  }

  // ---------------------------------------------------------------- state

  /**
   * How fast this tier reads its blocks out of its files: timed on its {@link #getInto} reads
   * (page faults, checksum or decoding included); a tiered cache adds the reads it promotes into
   * RAM through this tier's leases.
   */
  @Override
  public LoadRate loadRate() {
    return loadRate;
  }

  @Override
  public String name() {
    return "disk";
  }

  @Override
  public long capacityBytes() {
    return config.capacityBytes();
  }

  @Override
  public int maxBlockBytes() {
    return config.maxBlockBytes();
  }

  /** The directory this tier lives in. */
  public Path directory() {
    return dir;
  }

  /** Bytes the tier's files take: super-blocks (the active one whole), journal and checkpoint. */
  private long usedBytes() {
    Journal j = journal;
    long used = checkpointBytes + (j == null ? 0 : j.sizeBytes());
    SuperBlock a = active;
    for (SuperBlock sb : superBlocks.values()) {
      used += sb == a ? sb.sizeBytes() : alignUp(sb.end(), PAGE);
    }
    for (SuperBlock sb : retiring) {
      if (!sb.isReleased()) {
        used += alignUp(sb.end(), PAGE);
      }
    }
    return used;
  }

  @Override
  public CacheStats stats() {
    reapRetired();
    return counters.snapshot(index.size(), usedBytes(), config.capacityBytes(),
        blocksRewritten.sum(), bytesRewritten.sum());
  }

  /** The disk tier's own counters. */
  public DiskStats diskStats() {
    return new DiskStats(corruptBlocks.sum(), unchangedPuts.sum(), bytesWritten.sum(),
        superBlocks.size(), superBlocksDropped.sum(), writeFailures.sum(), syncs.sum());
  }

  /**
   * Degraded while there is no room for a new super-block or while writes fail. Room is checked
   * again now, so a probe sees space that came back before the next put does; the check only
   * reads (the next put starts the super-block).
   */
  @Override
  public CacheHealth health() {
    List<String> problems = new ArrayList<>(2);
    String room = noRoom;
    if (room != null && !roomCameBack()) {
      problems.add(room);
    }
    String failure = writeFailure;
    if (failure != null) {
      problems.add(failure);
    }
    return new CacheHealth(problems);
  }

  /**
   * Whether a put would now find the room {@link #noRoom} says there was not (for the journal and
   * the super-block it lacks), without dropping anything.
   */
  private boolean roomCameBack() {
    if (closed) {
      return false;
    }
    if (journal != null && active != null) {
      return true;
    }
    long size = active == null ? config.superBlockBytes() : 0;
    try {
      return usedBytes() + size <= config.capacityBytes() && shortOfSpace(size) <= 0;
    } catch (IOException e) {
      log.debug("checking for room in {}: {}", dir, e.toString());
      return false;
    }
  }

  private void requireOpen() {
    if (closed) {
      throw new IllegalStateException("the disk tier in " + dir + " is closed");
    }
  }

  /**
   * Checkpoints the index (so the next open is fast), closes the files and releases the
   * directory. Leases still open stay readable until closed.
   */
  @Override
  public void close() {
    synchronized (writeLock) {
      if (closed) {
        return;
      }
      closed = true;
    }
    if (syncer != null) {
      syncer.shutdownNow();
    }
    reclaimer.stop();
    try {
      SuperBlock a = active;
      if (a != null) {
        long used = alignUp(a.end(), PAGE);
        a.force();
        a.truncate(used);
        a.end(used);
      }
      Journal old = journal;
      if (old != null) { // else nothing changed since the open, whose metadata stays as it was
        long next = old.generation() + 1;
        Checkpoint.write(device, dir, next, sequence.get(), index.entrySet(), this::forceDirty);
        old.retire();
        device.delete(old.path());
      }
    } catch (IOException e) {
      log.warn("closing the disk tier in {}: {} (the next open replays the journal)", dir, e.toString());
    } finally {
      closeFiles();
    }
  }

  private void closeFiles() {
    if (syncer != null) {
      syncer.shutdownNow();
    }
    for (SuperBlock sb : superBlocks.values()) {
      sb.close();
    }
    try {
      if (journal != null) {
        journal.close();
      }
    } catch (IOException e) {
      log.debug("closing the journal: {}", e.toString());
    }
    try {
      directoryLock.close();
    } catch (IOException e) {
      log.debug("releasing the directory lock: {}", e.toString());
    }
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
