package dev.kvcache.disk;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.BlockWriter;
import dev.kvcache.CacheHealth;
import dev.kvcache.CacheStats;
import dev.kvcache.GetStatus;
import dev.kvcache.Namespace;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.disk.device.StorageDevice;
import dev.kvcache.disk.internal.DirectoryLock;
import dev.kvcache.disk.internal.DirectoryState;
import dev.kvcache.disk.internal.FileSpace;
import dev.kvcache.disk.internal.Location;
import dev.kvcache.disk.internal.RateLimiter;
import dev.kvcache.disk.internal.Records;
import dev.kvcache.disk.internal.SuperBlock;
import dev.kvcache.spi.AbstractTier;
import dev.kvcache.spi.BlockEvictionListener;
import dev.kvcache.spi.BlockListener;
import dev.kvcache.spi.BlockTags;
import dev.kvcache.spi.LoadRate;
import dev.kvcache.spi.NamespaceRemoval;
import dev.kvcache.spi.PinnedPrefix;
import dev.kvcache.spi.QuotaGauges;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierVisitor;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
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
import java.util.function.LongSupplier;
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
 * <p><b>Parts.</b> This class is the front: it opens and recovers the directory and answers for
 * the tier. The work is done by {@code SuperBlockSpace} (the super-blocks, reservations, roll-over
 * and room) with {@code Streams} (a stream of super-blocks per disk quota), {@code BlockIndex}
 * (the index and the live bytes per super-block), {@code MetadataLog} (journal, syncs and
 * checkpoints), {@link RecordWrites} (puts, writers, deletes), {@code RecordReads} (leases and
 * copying reads), {@code Seals} (sealed namespaces), {@code SuperBlockDrops} (drops and what they
 * evict) and {@code Compactor} (reclamation), over a {@link dev.kvcache.disk.device.StorageDevice} that
 * every file operation goes through.
 */
public final class DiskTier extends AbstractTier implements NamespaceRemoval {

  private static final Logger log = LoggerFactory.getLogger(DiskTier.class);

  private final DiskTierConfig config;
  private final Path dir;
  private final StorageDevice device;
  private final DirectoryLock directoryLock;
  private final BlockIndex index;
  private final RecordReads reads;
  private final Compactor compactor;
  private final SuperBlockDrops drops;
  /** The sealed namespaces ({@link DiskTierConfig#sealed()}); null if none is. */
  private final Seals seals;
  private final RecordWrites writes;
  /** Null when {@link DiskTierConfig#scrubBytesPerSecond()} is 0. */
  private final Scrubber scrubber;
  private final SuperBlockSpace space;
  /** Live super-blocks by id, oldest first ({@link SuperBlockSpace#superBlocks}). */
  private final ConcurrentSkipListMap<Integer, SuperBlock> superBlocks;
  private final AtomicLong sequence = new AtomicLong();
  private final ScheduledExecutorService syncer;
  private final Reclaimer reclaimer;
  private final MetadataLog metadata;

  private final LoadRate loadRate = new LoadRate();
  private final LongAdder corruptBlocks = new LongAdder();
  private final LongAdder unchangedPuts = new LongAdder();
  private final LongAdder bytesWritten = new LongAdder();
  private final LongAdder blocksRewritten = new LongAdder();
  private final LongAdder bytesRewritten = new LongAdder();
  private final LongAdder writeFailures = new LongAdder();

  private DiskTier(DiskTierConfig config, DirectoryLock directoryLock, FileSpace fileSpace,
      DirectoryState state) throws IOException {
    this.config = config;
    this.dir = config.directory();
    this.device = config.device();
    this.directoryLock = directoryLock;
    sequence.set(state.maxSequence);
    this.metadata = new MetadataLog(device, dir, config.syncPolicy(),
        config.checkpointJournalBytes(), state.nextGeneration, this::forceDirty,
        this::indexEntries, sequence::get);
    this.space = new SuperBlockSpace(config, fileSpace, metadata, sequence, state.superBlocks,
        state.nextSuperBlockId);
    this.superBlocks = space.superBlocks();
    this.index = new BlockIndex(state.index, superBlocks, this::stored, this::removed);
    this.seals = Seals.of(config);
    this.reads = new RecordReads(index, superBlocks, counters(), loadRate, corruptBlocks,
        config.directReads(), dir.toString(), seals);
    this.drops = new SuperBlockDrops(index, space, metadata, reads, counters());
    this.compactor = new Compactor(config, index, space, metadata, reads, drops::drop,
        bytesWritten, blocksRewritten, bytesRewritten);
    this.writes = new RecordWrites(config, index, space, metadata, sequence, counters(),
        unchangedPuts, bytesWritten, writeFailures, this::tagOf, seals);
    this.scrubber = config.scrubBytesPerSecond() > 0
        ? new Scrubber(superBlocks, index, reads, config.scrubBytesPerSecond(), dir.toString())
        : null;
    this.syncer = config.syncPolicy() == SyncPolicy.PERIODIC
        ? Executors.newSingleThreadScheduledExecutor(r -> {
          Thread t = new Thread(r, "kvcache-disk-sync");
          t.setDaemon(true);
          return t;
        })
        : null;
    this.reclaimer = new Reclaimer(this, config.reclaimBytesPerSecond());
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
      if (tier.scrubber != null) {
        tier.scrubber.start();
      }
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
    space.open(drops::drop, reclaimer::wake);
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
  protected PutStatus store(BlockKey key, ByteBuffer src) {
    return writes.put(key, src);
  }

  /**
   * As {@link #put}, checking the bytes against {@code crc32c}: a payload written past the page
   * cache is checked on the copy made for the device, in the same pass, and the record is
   * completed only if it matches; any other is checked before it is written.
   */
  @Override
  protected PutStatus storeChecked(BlockKey key, ByteBuffer src, int crc32c) {
    return writes.put(key, src, crc32c);
  }

  /**
   * A writer straight into the block's record, its parts written to their place as they come.
   * The block's sequence is taken at the commit, so a put of the same key that completes while
   * the writer is open is replaced by the commit, as it would be by a later put.
   */
  @Override
  protected BlockWriter openWriter(BlockKey key, int length) {
    if (seals != null && seals.seals(key)) {
      return stagedWriter(key, length); // sealed whole at the commit
    }
    return writes.writer(key, length);
  }

  @Override
  protected boolean remove(BlockKey key) {
    return writes.delete(key);
  }

  /**
   * As {@link AbstractTier#listen}. A {@link BlockTags} listener is given the tags kept with the
   * blocks the tier writes from now on, and is told of each block the tier holds with a tag
   * ({@link BlockTags#found}), from a thread of the tier's that reads them in the background: a
   * block written or dropped meanwhile may be told before or after.
   */
  @Override
  public boolean listen(BlockListener listener) {
    super.listen(listener);
    if (listener instanceof BlockTags tags) {
      Thread t = new Thread(() -> tellTags(tags), "kvcache-disk-tags");
      t.setDaemon(true);
      t.start();
    }
    return true;
  }

  /** Tells {@code tags} of every indexed block that has an intact tag. */
  private void tellTags(BlockTags tags) {
    long start = System.nanoTime();
    int[] told = {0};
    IndexWalk.forEachRecord(index, superBlocks, space::closed,
        (key, sb, loc) -> index.get(key) == loc ? Records.tagOf(sb, key, loc) : null,
        (key, tag) -> {
          if (tag != null) {
            tags.found(name(), key, tag);
            told[0]++;
          }
        });
    if (space.closed()) {
      return;
    }
    log.info("the disk tier in {} told the tags of {} of its blocks in {} ms", dir, told[0],
        (System.nanoTime() - start) / 1_000_000);
    tags.foundAll(name());
  }

  /**
   * Hands the live blocks of each super-block dropped to make room to {@code listener}, as leases
   * that keep the super-block's file (though no longer its place in the capacity) until closed.
   */
  @Override
  public boolean onEviction(BlockEvictionListener listener) {
    drops.onEviction(listener);
    return true;
  }

  /**
   * The bytes of super-block files that count against {@code namespace}'s disk quota: its own
   * super-blocks' (an active one whole), if it has a quota ({@link DiskTierConfig#quotas()});
   * otherwise those the namespaces without one share.
   */
  public long usedBytesOf(Namespace namespace) {
    return space.streams().bytes(namespace == null ? Streams.SHARED
        : space.streams().of(namespace.tag()));
  }

  /**
   * Destroys the salt of a sealed namespace ({@link DiskTierConfig.Builder#sealing}): at once, no
   * block sealed under it opens again, from this directory or any copy of its files; each is a
   * miss, dropped when read. The namespace's next put makes a new salt.
   *
   * @return whether the namespace had a salt
   * @throws IOException if the salt cannot be deleted
   */
  public boolean shred(Namespace namespace) throws IOException {
    space.requireOpen();
    return seals != null && seals.shred(namespace);
  }

  /** As {@link #shred}, the error unchecked. */
  @Override
  public boolean shredNamespace(Namespace namespace) {
    try {
      return shred(namespace);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot delete the salt of " + namespace + ": " + e, e);
    }
  }

  /**
   * Shreds the namespace ({@link #shred}), then removes each of its blocks from the index, as a
   * delete does: the records' bytes stay in their files until their super-blocks are reclaimed.
   */
  @Override
  public Map<String, Long> removeNamespace(Namespace namespace) {
    shredNamespace(namespace);
    long[] removed = {0};
    IndexWalk.forEachRecord(index, superBlocks, space::closed,
        (key, sb, loc) -> Records.namespaceTag(sb, loc), (key, tag) -> {
      if (tag == namespace.tag() && delete(key)) {
        removed[0]++;
      }
    });
    log.info("removed namespace {} from the disk tier in {}: {} blocks", namespace, dir,
        removed[0]);
    return Map.of(name(), removed[0]);
  }

  /** Sealed blocks that did not open and were dropped: their tag failed, or their salt is gone. */
  public long sealFailures() {
    return seals == null ? 0 : seals.failures();
  }

  /** One step of background reclamation; see {@link Compactor#reclaimOnce}. */
  boolean reclaimOnce(RateLimiter limiter, BooleanSupplier stop) throws IOException {
    return compactor.reclaimOnce(limiter, stop);
  }

  /**
   * Forces every block stored so far, and its journal entry, to the device: after it returns, a
   * power loss loses none of them, whatever the {@link SyncPolicy}.
   */
  public void sync() throws IOException {
    ensureOpen();
    metadata.sync();
  }

  /** Forces the super-blocks written since their last force (see {@code SuperBlockSpace}). */
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
  protected BlockLease lease(BlockKey key) {
    return reads.get(key);
  }

  /**
   * Leases each block, as {@link #get} does; blocks read past the page cache ({@link
   * DiskTierConfig#directReads()}) are read several at a time.
   */
  @Override
  protected List<BlockLease> leaseAll(List<BlockKey> keys) {
    return reads.getAll(keys);
  }

  /** Copies the block into {@code dst}, checking its checksum on the way; see {@link Tier}. */
  @Override
  protected GetStatus copyInto(BlockKey key, ByteBuffer dst) {
    return reads.getInto(key, dst);
  }

  @Override
  protected boolean holds(BlockKey key) {
    return index.contains(key);
  }

  /**
   * Pins the leading keys the tier holds without reading them ({@link DiskPin}): their records
   * stay whatever happens to the keys, and each is read and checked when read through the pin.
   * Each pinned block counts as a hit, the first key not found as a miss.
   */
  @Override
  protected PrefixPin pin(List<BlockKey> keys, Duration timeout) {
    DiskPin pinned = DiskPin.pin(reads, counters(), index, superBlocks, keys);
    counters().hits(pinned.blocks());
    if (pinned.blocks() < keys.size()) {
      counters().miss();
    }
    return PinnedPrefix.over(pinned, timeout);
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

  /**
   * Bytes free on this tier's file system now (-1 if it cannot tell): the tier starts no
   * super-block that would leave less than {@link #minFreeBytes()}.
   */
  public long fileSystemFreeBytes() {
    return space.fileSystemFreeBytes();
  }

  /** The free space this tier leaves on its file system ({@code min-free}, or its default). */
  public long minFreeBytes() {
    return space.minFreeBytes();
  }

  /** The directory this tier lives in. */
  public Path directory() {
    return dir;
  }

  @Override
  public CacheStats stats() {
    space.reapRetired();
    return counters().snapshot(index.size(), space.usedBytes(), config.capacityBytes(),
        blocksRewritten.sum(), bytesRewritten.sum());
  }

  /**
   * Reports the tier's reads and bytes, its background scrub (what it checked, the damaged blocks
   * it found and dropped before a read met them, its passes), the bytes it read past the page
   * cache, and the free space of its file system beside the floor it keeps.
   */
  @Override
  public void describe(TierVisitor visitor, LongSupplier hits) {
    super.describe(visitor, hits);
    QuotaGauges.describe(visitor, name(), config.quotas(), this::usedBytesOf);
    if (seals != null) {
      visitor.counter("kvcache.seal.failures", "sealed blocks that did not open (their tag failed,"
          + " their namespace's salt or their master key is gone), read as misses and dropped",
          seals::failures, "tier", name());
    }
    visitor.counter("kvcache.scrub.bytes", "bytes of block records the disk tier's background"
        + " scrub checked against their checksums", () -> diskStats().scrubbedBytes());
    visitor.counter("kvcache.scrub.damaged", "damaged blocks the scrub found, and dropped, before"
        + " a read met them", () -> diskStats().scrubDamaged());
    visitor.counter("kvcache.scrub.passes", "passes of the scrub over every super-block of the"
        + " disk tier", () -> diskStats().scrubPasses());
    visitor.counter("kvcache.disk.direct.read.bytes", "bytes of blocks the disk tier read past the"
        + " page cache: reads of blocks that were not in it", reads::directReadBytes);
    visitor.gauge("kvcache.disk.fs.free.bytes", "bytes free on the disk tier's file system; below"
        + " kvcache_disk_min_free_bytes the tier starts no super-block and refuses puts",
        this::fileSystemFreeBytes);
    visitor.gauge("kvcache.disk.min.free.bytes", "the free space the disk tier leaves on its file"
        + " system (min-free)", this::minFreeBytes);
  }

  /** The disk tier's own counters. */
  public DiskStats diskStats() {
    return new DiskStats(corruptBlocks.sum(), unchangedPuts.sum(), bytesWritten.sum(),
        superBlocks.size(), drops.dropped(), writeFailures.sum(), metadata.syncs(),
        scrubber == null ? 0 : scrubber.bytes(), scrubber == null ? 0 : scrubber.damaged(),
        scrubber == null ? 0 : scrubber.passes(), reads.directReadBytes());
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
    String failure = writes.writeFailure();
    if (failure != null) {
      problems.add(failure);
    }
    return new CacheHealth(problems);
  }

  @Override
  protected void ensureOpen() {
    space.requireOpen();
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
    if (scrubber != null) {
      scrubber.stop();
    }
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
    if (scrubber != null) {
      scrubber.stop();
    }
    if (syncer != null) {
      syncer.shutdownNow();
    }
    if (writes != null) {
      writes.close();
    }
    if (reads != null) {
      reads.close();
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
