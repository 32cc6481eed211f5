package dev.kvcache.tiered;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.BlockWriter;
import dev.kvcache.CacheHealth;
import dev.kvcache.CacheStats;
import dev.kvcache.GetStatus;
import dev.kvcache.PrefixLocation;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.spi.AbstractTier;
import dev.kvcache.spi.BlockListener;
import dev.kvcache.spi.ChecksumMismatchException;
import dev.kvcache.spi.NamespaceRemoval;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierVisitor;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An off-heap RAM tier over a lower tier (the disk tier, or a remote one), behind one {@link
 * dev.kvcache.KvCache}.
 *
 * <p><b>Where a block is.</b> Puts go to RAM. Blocks RAM's policy evicts are handed, still pinned
 * in RAM, to a bounded spill queue; spill threads ({@link TieredCacheConfig#spillThreads()})
 * write them to the lower tier in eviction order. Waiting blocks pin at most a quarter of RAM (and at most {@link
 * TieredCacheConfig#spillQueueBlocks()} blocks), so puts keep finding room. While a block waits,
 * reads find it in the queue's index, so a block is findable in some tier from the moment its put
 * returns until it is dropped: by the lower tier's own eviction, or because the queue was full
 * when RAM evicted it ({@link TieredStats#spillDrops()}). Reads look in RAM, then the queue, then
 * the lower tier; a lower-tier hit is copied into RAM (promotion) when {@link
 * TieredCacheConfig#promoteOnLowerHit()} is set and the queue has room. A promoted block that is
 * not put again is not written again when RAM evicts it: the lower tier still has it.
 *
 * <p><b>Durability.</b> What a put's answer promises about the lower tier is the configured {@link
 * Durability}'s: nothing ({@link Durability#RAM_FIRST}: blocks go down when RAM evicts them); that
 * the block is queued behind the put and at most {@link TieredCacheConfig#spillQueueBlocks()}
 * acknowledged blocks wait ({@link Durability#WRITE_BEHIND}); or that the lower tier has stored it
 * ({@link Durability#WRITE_THROUGH}); the mode is a {@link PutPolicy}. A copy written behind or
 * through marks its key clean, so that RAM's eviction does not write it again. The spill queue and
 * its thread are a {@link SpillQueue}.
 *
 * <p><b>Never stale bytes.</b> A put or delete of a key first removes the key's older copies
 * everywhere: it deletes the old copy from RAM (a delete, not an eviction, so it is not spilled),
 * cancels its queued spill (or waits for a spill write of that key under way to end), and deletes
 * it from the lower tier; only then does a put store the new bytes, so every spill of the key
 * after that carries them. RAM runs its eviction listener atomically with the removal, so an
 * eviction of the old copy has queued it before the delete, or does not happen. A read concurrent
 * with a put of the same key may miss. Puts, deletes and promotions of one key are serialised by a
 * lock stripe; spill writes take no lock. A promotion carries the stripe's generation from before
 * its read: if a put or delete of a key in the stripe came in between, the bytes read may be older
 * than RAM's and are not promoted.
 *
 * <p><b>Threads.</b> All methods are thread-safe. RAM evictions run on the thread of the put that
 * causes them and never wait: a full queue drops the block instead. To keep that rare, a put that
 * finds the queue more than half full, or RAM's memory pinned by waiting blocks, first waits for
 * the spill threads, up to {@link TieredCacheConfig#spillQueueWait()}.
 *
 * <p><b>Parts.</b> This class holds the API's contracts, deletes, spilling and closing; the
 * writes (put, writer, commit, under the key's stripe lock and the policy's steps in one order) are
 * {@link TieredWrites}, the reads {@link TieredReads}, the coherence of the copies (key stripes,
 * the clean set, dropping a key's old copies) a {@link CopyCoherence} the reads and writes share,
 * the durability mode a {@link PutPolicy}, the room puts make in RAM a {@link RoomInRam}, and the
 * spill queue a {@link SpillQueue}.
 */
public final class TieredCache extends AbstractTier {

  private static final Logger log = LoggerFactory.getLogger(TieredCache.class);

  private final RamTier ram;
  private final Tier lower;
  private final TieredCacheConfig config;
  private final SpillQueue spills;
  private final RoomInRam room;
  private final CopyCoherence copies;
  private final KeyStripes stripes;
  private volatile boolean closed;

  private final LongAdder spillsSkipped = new LongAdder();
  private final TieredReads reads;
  private final TieredWrites writes;

  /**
   * A RAM tier of {@code ramConfig} over {@code lower}, which the cache now owns: closing the cache
   * closes it.
   *
   * @throws IllegalStateException if the JVM cannot reserve the RAM tier's direct memory
   */
  public TieredCache(RamTierConfig ramConfig, Tier lower, TieredCacheConfig config) {
    this.lower = Objects.requireNonNull(lower, "lower");
    this.config = Objects.requireNonNull(config, "config");
    long maxQueuedBytes = ramConfig.capacityBytes() / RoomInRam.SPILL_QUEUE_RAM_SHARE;
    this.spills = new SpillQueue(lower, config.spillQueueBlocks(), maxQueuedBytes,
        config.spillThreads(), this::copyStored, this::retryCopy);
    try {
      this.ram = new RamTier(ramConfig, this::onRamEviction);
    } catch (RuntimeException | Error e) {
      spills.close();
      throw e;
    }
    this.room = new RoomInRam(ram, spills, config, maxQueuedBytes);
    this.copies = new CopyCoherence(ram, spills);
    this.stripes = copies.stripes();
    this.reads = new TieredReads(ram, lower, config, spills, copies, counters(), () -> closed);
    this.writes = new TieredWrites(ram, lower, spills, room, copies,
        PutPolicy.of(config.durability(), ram, lower, spills, copies), counters(), () -> closed);
  }

  @Override
  public String name() {
    return "ram+" + lower.name();
  }

  /** The sum of the tiers' budgets. */
  @Override
  public long capacityBytes() {
    return ram.capacityBytes() + lower.capacityBytes();
  }

  /** The larger of the tiers' limits: a block too large for RAM goes straight to the lower tier. */
  @Override
  public int maxBlockBytes() {
    return Math.max(ram.maxBlockBytes(), lower.maxBlockBytes());
  }

  // ---------------------------------------------------------------- writes

  /**
   * Stores a block in RAM, or in the lower tier when RAM cannot take it; what the answer promises
   * about the lower tier is the configured {@link Durability}'s.
   */
  @Override
  protected PutStatus store(BlockKey key, ByteBuffer src) {
    return writes.store(key, src);
  }

  /**
   * A writer into RAM, which makes room as a put does, or into the lower tier when RAM cannot take
   * the block. Opening it already removes the key's copy from RAM; the lower tier's copy stays
   * readable until the commit.
   */
  @Override
  protected BlockWriter openWriter(BlockKey key, int length) {
    return writes.open(key, length);
  }

  /**
   * A writer into RAM, if the block goes there and RAM has room now without waiting for the spill
   * thread or compacting more than the block's length ({@link RamTier#tryWriter}), and its commit
   * need not wait for the lower tier; empty otherwise (always under {@link
   * Durability#WRITE_THROUGH}), and while a put, delete or promotion of a key of the same lock
   * stripe is under way. Opening it removes the key's copy from RAM, as {@link #writer} does.
   */
  @Override
  public Optional<BlockWriter> tryWriter(BlockKey key, int length) {
    if (!takes(key, length)) {
      return Optional.of(BlockWriter.rejected(key, length, PutStatus.REJECTED_TOO_LARGE));
    }
    return writes.tryOpen(key, length);
  }

  @Override
  protected boolean remove(BlockKey key) {
    int stripe = KeyStripes.of(key);
    boolean removed;
    ReentrantLock lock = stripes.lock(stripe);
    lock.lock();
    try {
      stripes.bump(stripe);
      removed = copies.removeAbove(key);
      removed |= lower.delete(key);
      stripes.bump(stripe);
    } finally {
      lock.unlock();
    }
    if (removed) {
      counters().delete();
    }
    return removed;
  }

  // ---------------------------------------------------------------- reads

  @Override
  protected BlockLease lease(BlockKey key) {
    return reads.get(key);
  }

  @Override
  protected GetStatus copyInto(BlockKey key, ByteBuffer dst) {
    return reads.getInto(key, dst);
  }

  /** True: a block RAM and the spill queue lack is read from the lower tier. */
  @Override
  public boolean readsMayWait() {
    return true;
  }

  /**
   * The lease on the key's block in RAM or in the spill queue, counted as a hit; empty if neither
   * holds it, when the lower tier may (nothing is counted then: {@link #get} counts the read).
   */
  @Override
  public Optional<BlockLease> tryGet(BlockKey key) {
    return Optional.ofNullable(reads.getAbove(key));
  }

  /**
   * Leases each block, as {@link #get} does. The blocks neither RAM nor the spill queue holds are
   * read from the lower tier in one {@link Tier#getAll} call, which an object tier answers with its
   * downloads under way at once; each is promoted into RAM as {@link #get} promotes it.
   */
  @Override
  protected List<BlockLease> leaseAll(List<BlockKey> keys) {
    return reads.getAll(keys);
  }

  /**
   * Copies each block into the buffer at the same index, as {@link #getInto} does. The blocks
   * neither RAM nor the spill queue holds are read from the lower tier in one {@link
   * Tier#getAllInto} call, which a remote tier answers in batches.
   *
   * @return the status of each block, in order
   * @throws IllegalArgumentException if the lists differ in size
   */
  @Override
  public GetStatus[] getAllInto(List<BlockKey> keys, List<ByteBuffer> dsts) {
    return reads.getAllInto(keys, dsts);
  }

  /**
   * Copies each block into the buffer at the same index, as {@link #getAllInto} does, and tells
   * which tier served it.
   *
   * @return each block's status and source, in order
   * @throws IllegalArgumentException if the lists differ in size
   */
  public TieredRead[] readAllInto(List<BlockKey> keys, List<ByteBuffer> dsts) {
    return reads.readAllInto(keys, dsts);
  }

  @Override
  protected boolean holds(BlockKey key) {
    return reads.contains(key);
  }

  /**
   * How many leading keys some tier holds. Each run of keys that neither RAM nor the spill queue
   * holds is looked up in the lower tier with one {@link Tier#lookupPrefix} call, which a remote
   * tier answers with one request per server instead of one per key.
   */
  @Override
  protected int countPrefix(List<BlockKey> keys) {
    return reads.lookupPrefix(keys);
  }

  /**
   * Where the leading keys are, in runs by tier ({@code ram}, {@code spill}, then the lower tier's
   * runs), with each run's load time estimated from its tier's recent reads.
   */
  @Override
  protected PrefixLocation locate(List<BlockKey> keys) {
    return reads.locatePrefix(keys);
  }

  /**
   * Pins the leading keys some tier holds, as {@link #lookupPrefix} finds them: copies in RAM or
   * in the spill queue under leases, and each run of keys these lack with one {@link
   * Tier#pinPrefix} call to the lower tier, which keeps those blocks in its own way (a remote tier
   * under its servers' leases, fetching a block only when it is read). A block read through the
   * lower tier's pin is promoted into RAM as {@link #get} promotes a lower-tier hit, unless a put
   * or delete in its stripe came after the pin.
   */
  @Override
  protected PrefixPin pin(List<BlockKey> keys, Duration timeout) {
    return reads.pinPrefix(keys, timeout);
  }

  // ---------------------------------------------------------------- spilling

  /** A copy written behind or through reached the lower tier ({@link TieredWrites#copyStored}). */
  private void copyStored(BlockKey key) {
    writes.copyStored(key);
  }

  /** Queues a failed copy again ({@link TieredWrites#retryCopy}). */
  private void retryCopy(BlockKey key) {
    writes.retryCopy(key);
  }

  /**
   * RAM's eviction listener: on the evicting thread, must not wait. A block the lower tier holds
   * already (clean), or whose copy is on its way there, is not written again.
   */
  private void onRamEviction(BlockLease lease) {
    BlockKey key = lease.key();
    if ((copies.takeClean(key) && !closed && lower.contains(key)) || spills.holds(key)) {
      spillsSkipped.increment();
      lease.close();
    } else if (closed && config.spillOnClose()) {
      // the spill threads are stopping; close() writes what RAM holds, and a block the policy evicts
      // meanwhile (Caffeine may finish pending maintenance inside the snapshot close iterates)
      // is written here, on the thread that evicted it
      spills.writeEvicted(lease);
    } else if (!spills.evicted(lease, room.pastWait())) {
      spillsSkipped.increment();
    }
  }

  /**
   * Waits until every block RAM has evicted so far, and every copy queued behind a put, is written
   * to the lower tier or dropped (for a planned hand-over, or tests).
   *
   * @return false if blocks were still waiting after {@code timeout}
   */
  public boolean awaitSpills(Duration timeout) throws InterruptedException {
    return spills.awaitEmpty(timeout);
  }

  // ---------------------------------------------------------------- stats and close

  /** How blocks moved between the tiers. */
  public TieredStats tieredStats() {
    return new TieredStats(reads.ramHits(), reads.spillHits(), reads.lowerHits(),
        stats().misses(), spills.spills(), spillsSkipped.sum(), spills.drops(), reads.promotions(),
        spills.copies(), spills.failures(), spills.failedCopies(), writes.notDurablePuts());
  }

  /**
   * Reports RAM (its reads and bytes), the blocks on their way down ({@code spill}), the moves
   * between the tiers, and then the lower tier, handing it the reads it served.
   */
  @Override
  public void describe(TierVisitor visitor, LongSupplier hits) {
    visitor.hits(ram.name(), () -> reads.ramHits());
    visitor.hits("spill", () -> reads.spillHits());
    visitor.bytes(ram.name(), () -> ram.stats().bytesUsed(), () -> ram.stats().capacityBytes());
    ram.describeQuotas(visitor);
    String lowerName = lower.name();
    visitor.counter("kvcache.lower.write.failures", "writes to the " + lowerName + " tier (spills,"
        + " and copies written behind or through) refused for lack of room or failed",
        spills::failures);
    visitor.counter("kvcache.spill.drops", "blocks RAM evicted that reached no tier",
        spills::drops);
    visitor.counter("kvcache.lower.copies", "blocks written to the " + lowerName + " tier as they"
        + " were put (written behind or through)", spills::copies);
    visitor.counter("kvcache.puts.not.durable", "PUTs refused (507 not-durable): writes to the "
        + lowerName + " tier failed and the write-behind window was full of blocks only RAM holds",
        writes::notDurablePuts);
    visitor.gauge("kvcache.lower.failed.copies", "blocks written behind whose write to the "
        + lowerName + " tier failed, held by RAM alone", spills::failedCopies);
    lower.describe(visitor, () -> reads.lowerHits());
  }

  /**
   * Hands {@code listener} to RAM and to the lower tier, which tell it by their own names: a block
   * RAM evicts leaves {@code ram}, and is stored below once its spill lands.
   *
   * @return whether RAM tells (the lower tier may tell nothing, as a remote tier does)
   */
  @Override
  public boolean listen(BlockListener listener) {
    lower.listen(listener);
    return ram.listen(listener);
  }

  /**
   * The capability of RAM, or else of the lower tier; a {@link NamespaceRemoval} covers both, the
   * blocks RAM is spilling included.
   */
  @Override
  public <C> Optional<C> capability(Class<C> type) {
    if (type == NamespaceRemoval.class) {
      return StackRemoval.of(ram, () -> awaitSpills(StackRemoval.DRAIN), lower).map(type::cast);
    }
    return ram.capability(type).or(() -> lower.capability(type));
  }

  /** The RAM tier's own counters. */
  public CacheStats ramStats() {
    return ram.stats();
  }

  /** The lower tier's own counters. */
  public CacheStats lowerStats() {
    return lower.stats();
  }

  /**
   * The tier below RAM, for its own statistics and controls (a {@link StackedTier}'s uploads, an
   * object tier's requests); reads and writes go through this cache.
   */
  public Tier lower() {
    return lower;
  }

  /**
   * The whole cache: reads, puts and deletes as the caller made them; evictions are blocks that
   * left the last tier or were dropped on the way to it; {@code blocks} counts a promoted block in
   * both tiers; bytes and capacity are the tiers' sums.
   */
  @Override
  public CacheStats stats() {
    CacheStats r = ram.stats();
    CacheStats l = lower.stats();
    CacheStats own = counters().snapshot(r.blocks() + spills.size() + l.blocks(),
        r.bytesUsed() + l.bytesUsed(), r.capacityBytes() + l.capacityBytes(),
        r.compactions() + l.compactions(), r.bytesCompacted() + l.bytesCompacted());
    return new CacheStats(own.hits(), own.misses(), own.puts(), l.evictions() + spills.drops(),
        own.rejections(), own.deletes(), own.blocks(), own.bytesUsed(), own.capacityBytes(),
        own.leasesOpen(), own.compactions(), own.bytesCompacted());
  }

  /**
   * Healthy unless the lower tier is degraded, or writes to it fail (the last spill or copy was
   * refused for lack of room, or threw).
   */
  @Override
  public CacheHealth health() {
    CacheHealth health = ram.health().and(lower.name(), lower.health());
    String failure = spills.lastFailure();
    if (failure == null) {
      return health;
    }
    if (!health.degraded()) { // the lower tier's own health may already say why
      health = CacheHealth.degraded("writes to the " + lower.name() + " tier fail: " + failure);
    }
    int onlyInRam = spills.failedCopies();
    if (onlyInRam == 0) {
      return health;
    }
    return health.and("write-behind", CacheHealth.degraded(onlyInRam
        + " blocks written behind are in RAM only"
        + (spills.refusesWriteBehind()
            ? ", and puts are refused until a write succeeds" : "")));
  }

  /**
   * Writes the blocks waiting in the spill queue to the lower tier, then, if {@link
   * TieredCacheConfig#spillOnClose()}, the blocks RAM holds, then closes both tiers; the lower tier
   * keeps what it persists. Leases still open stay readable until closed. Closing twice does
   * nothing.
   */
  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    spills.close();
    if (config.spillOnClose()) {
      spillRam();
    }
    ram.close();
    lower.close();
  }

  /** Writes RAM's blocks to the lower tier, hottest first, skipping those it holds unchanged. */
  private void spillRam() {
    long start = System.nanoTime();
    long[] written = {0, 0};
    try {
      ram.forEachHottestFirst(lease -> {
        BlockKey key = lease.key();
        ByteBuffer bytes = lease.bytes();
        if (copies.isClean(key) && lower.contains(key)) {
          return;
        }
        try {
          if (SpillEntry.putDown(lower, lease, bytes) == PutStatus.STORED) {
            written[0]++;
            written[1] += bytes.remaining();
          }
        } catch (ChecksumMismatchException e) {
          log.warn("{} not written to the {} tier on close: its bytes in RAM no longer have their"
              + " CRC32C", key, lower.name());
        }
      });
    } catch (RuntimeException e) {
      log.warn("writing RAM's blocks to the {} tier on close stopped: {}", lower.name(), e.toString());
    }
    log.info("wrote {} blocks ({} MiB) from RAM to the {} tier on close in {} ms", written[0],
        written[1] >> 20, lower.name(), (System.nanoTime() - start) / 1_000_000);
  }

  @Override
  protected void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("the tiered cache is closed");
    }
  }

  @Override
  public String toString() {
    return "TieredCache[" + ram + " over " + lower + "]";
  }
}
