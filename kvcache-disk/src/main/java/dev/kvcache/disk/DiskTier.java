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
import dev.kvcache.disk.SuperBlockSpace.Reservation;
import dev.kvcache.disk.device.StorageDevice;
import dev.kvcache.disk.internal.DirectoryLock;
import dev.kvcache.disk.internal.DirectoryState;
import dev.kvcache.disk.internal.Doorkeeper;
import dev.kvcache.disk.internal.FileSpace;
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
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;
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
  /** Written over the parts of a record whose writer was closed without a commit. */
  private static final ByteBuffer ZEROS = ByteBuffer.allocateDirect(64 << 10).asReadOnlyBuffer();

  private final DiskTierConfig config;
  private final Path dir;
  private final StorageDevice device;
  private final DirectoryLock directoryLock;
  private final BlockCodec codec;
  private final BlockIndex index;
  private final RecordReads reads;
  private final Compactor compactor;
  private volatile BlockEvictionListener evictionListener;
  private final SuperBlockSpace space;
  /** Live super-blocks by id, oldest first ({@link SuperBlockSpace#superBlocks}). */
  private final ConcurrentSkipListMap<Integer, SuperBlock> superBlocks;
  private final AtomicLong sequence = new AtomicLong();
  private final ScheduledExecutorService syncer;
  private final Reclaimer reclaimer;
  /** Keys put once, for {@link Admission#SEEN_BEFORE}; null otherwise. */
  private final Doorkeeper doorkeeper;
  /** The last write's failure, until a write succeeds; null when the last write succeeded. */
  private volatile String writeFailure;
  private final MetadataLog metadata;

  private final TierCounters counters = new TierCounters();
  private final LoadRate loadRate = new LoadRate();
  private final LongAdder corruptBlocks = new LongAdder();
  private final LongAdder unchangedPuts = new LongAdder();
  private final LongAdder bytesWritten = new LongAdder();
  private final LongAdder superBlocksDropped = new LongAdder();
  private final LongAdder blocksRewritten = new LongAdder();
  private final LongAdder bytesRewritten = new LongAdder();
  private final LongAdder writeFailures = new LongAdder();

  private DiskTier(DiskTierConfig config, DirectoryLock directoryLock, FileSpace fileSpace,
      DirectoryState state) throws IOException {
    this.config = config;
    this.dir = config.directory();
    this.device = config.device();
    this.directoryLock = directoryLock;
    this.codec = config.codec();
    sequence.set(state.maxSequence);
    this.metadata = new MetadataLog(device, dir, config.syncPolicy(),
        config.checkpointJournalBytes(), state.nextGeneration, this::forceDirty,
        this::indexEntries, sequence::get);
    this.space = new SuperBlockSpace(config, fileSpace, metadata, sequence, state.superBlocks,
        state.nextSuperBlockId);
    this.superBlocks = space.superBlocks();
    this.index = new BlockIndex(state.index, superBlocks);
    this.reads = new RecordReads(index, superBlocks, counters, loadRate, corruptBlocks);
    this.compactor = new Compactor(config, index, space, metadata, reads, this::dropSuperBlock,
        bytesWritten, blocksRewritten, bytesRewritten);
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
    long started = System.nanoTime();
    DiskTier tier;
    DirectoryState state = null;
    try {
      state = DirectoryState.load(device, config.directory(), true);
      tier = new DiskTier(config, lock,
          space != null ? space : FileSpace.of(device, config.directory()), state);
    } catch (IOException | RuntimeException e) {
      if (state != null) {
        state.close();
      }
      lock.close();
      throw e;
    }
    try {
      tier.recover(state, started);
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

  private void recover(DirectoryState state, long started) throws IOException {
    for (Path damaged : state.damagedSuperBlocks) {
      log.warn("{}: damaged super-block header, the file holds nothing usable: deleting it", damaged);
      device.delete(damaged);
    }
    for (SuperBlock sb : state.droppedSuperBlocks) {
      sb.drop(); // its drop was journalled but the file survived a crash
    }
    metadata.recovered(state, superBlocks.values());
    space.open(this::dropSuperBlock, reclaimer::wake);
    log.info("opened disk tier {}: {} blocks in {} super-blocks{}, {} ms", dir, index.size(),
        superBlocks.size(), state.rebuilt ? " (index rebuilt from the records)" : "",
        (System.nanoTime() - started) / 1_000_000);
    String noRoom = space.noRoom();
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
    if (doorkeeper != null && !index.contains(key) && !doorkeeper.seenOrRemember(key)) {
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
      Reservation r = space.reserve(reserve);
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
            space.giveBack(r, stored);
          }
        } catch (IOException e) {
          space.abandon(r);
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
      space.abandon(r);
      throw e;
    } finally {
      r.sb.unpin();
    }
    space.written(r.sb); // now that its bytes are written: the next sync forces them
    Location loc = new Location(r.sb.id(), (int) r.payload, stored, length, payloadCrc, encoding,
        seq, 0);
    boolean[] installed = {false};
    metadata.commit(JournalEntry.put(key, loc, 0, config.syncPolicy() == SyncPolicy.ALWAYS), r.sb,
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
    if (doorkeeper != null && !index.contains(key) && !doorkeeper.seenOrRemember(key)) {
      return new UnadmittedWriter(key, length);
    }
    try {
      Reservation r = space.reserve(codec == null ? length : codec.maxEncodedLength(length));
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
        space.abandon(r);
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
        space.giveBack(r, stored);
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
      space.abandon(r);
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

  /**
   * Hands the live blocks of each super-block dropped to make room to {@code listener}, as leases
   * that keep the super-block's file (though no longer its place in the capacity) until closed.
   */
  @Override
  public boolean onEviction(BlockEvictionListener listener) {
    this.evictionListener = Objects.requireNonNull(listener, "listener");
    return true;
  }

  /** One step of background reclamation; see {@link Compactor#reclaimOnce}. */
  boolean reclaimOnce(RateLimiter limiter, BooleanSupplier stop) throws IOException {
    return compactor.reclaimOnce(limiter, stop);
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
    index.install(key, loc);
    return true;
  }

  @Override
  public boolean delete(BlockKey key) {
    Objects.requireNonNull(key, "key");
    requireOpen();
    Location cur = index.get(key);
    if (cur == null) {
      return false;
    }
    if (!space.ensureJournal()) {
      String why = space.noRoom();
      throw new UncheckedIOException("could not journal the delete of " + key + ": " + why,
          new IOException(why));
    }
    try {
      Reservation r = space.reserve(0);
      if (r != null) {
        try {
          r.sb.write(Records.header(KIND_TOMBSTONE, ENCODING_RAW, r.sequence, key, 0, 0, 0),
              r.payload - HEADER_BYTES);
        } finally {
          r.sb.unpin();
          r.sb.finishRecord(); // a tombstone is not indexed
        }
        space.written(r.sb);
      }
      long seq = r != null ? r.sequence : sequence.incrementAndGet();
      boolean[] removed = {false};
      metadata.commit(JournalEntry.delete(key, seq), r != null ? r.sb : null,
          () -> removed[0] = index.deleteOlderThan(key, seq));
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
    metadata.sync();
  }

  /** Forces the super-blocks written since their last force (see {@link SuperBlockSpace}). */
  private void forceDirty() throws IOException {
    space.forceDirty();
  }

  /** What a checkpoint writes: every index entry. */
  private Iterable<Map.Entry<BlockKey, Location>> indexEntries() {
    return index.entries();
  }

  private void periodicSync() {
    try {
      if (!space.closed()) {
        sync();
      }
    } catch (IOException | RuntimeException e) {
      if (!space.closed()) {
        log.warn("periodic sync of {} failed: {}", dir, e.toString());
      }
    }
  }

  // ---------------------------------------------------------------- reads

  @Override
  public BlockLease get(BlockKey key) {
    Objects.requireNonNull(key, "key");
    requireOpen();
    return reads.get(key);
  }

  /** Copies the block into {@code dst}, checking its checksum on the way; see {@link Tier}. */
  @Override
  public GetStatus getInto(BlockKey key, ByteBuffer dst) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(dst, "dst");
    if (dst.isReadOnly()) {
      throw new ReadOnlyBufferException();
    }
    requireOpen();
    return reads.getInto(key, dst);
  }

  @Override
  public boolean contains(BlockKey key) {
    Objects.requireNonNull(key, "key");
    requireOpen();
    return index.contains(key);
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

  @Override
  public CacheStats stats() {
    space.reapRetired();
    return counters.snapshot(index.size(), space.usedBytes(), config.capacityBytes(),
        blocksRewritten.sum(), bytesRewritten.sum());
  }

  /** The disk tier's own counters. */
  public DiskStats diskStats() {
    return new DiskStats(corruptBlocks.sum(), unchangedPuts.sum(), bytesWritten.sum(),
        superBlocks.size(), superBlocksDropped.sum(), writeFailures.sum(), metadata.syncs());
  }

  /**
   * Degraded while there is no room for a new super-block or while writes fail. Room is checked
   * again now, so a probe sees space that came back before the next put does; the check only
   * reads (the next put starts the super-block).
   */
  @Override
  public CacheHealth health() {
    List<String> problems = new ArrayList<>(2);
    String room = space.noRoom();
    if (room != null) {
      problems.add(room);
    }
    String failure = writeFailure;
    if (failure != null) {
      problems.add(failure);
    }
    return new CacheHealth(problems);
  }

  private void requireOpen() {
    if (space.closed()) {
      throw new IllegalStateException("the disk tier in " + dir + " is closed");
    }
  }

  /**
   * Checkpoints the index (so the next open is fast), closes the files and releases the
   * directory. Leases still open stay readable until closed.
   */
  @Override
  public void close() {
    if (!space.close()) {
      return;
    }
    if (syncer != null) {
      syncer.shutdownNow();
    }
    reclaimer.stop();
    try {
      space.sealActive();
      metadata.closeWithCheckpoint();
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
    metadata.closeFile();
    try {
      directoryLock.close();
    } catch (IOException e) {
      log.debug("releasing the directory lock: {}", e.toString());
    }
  }
}
