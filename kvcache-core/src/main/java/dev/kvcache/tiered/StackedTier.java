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
import dev.kvcache.spi.PutChecks;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierCounters;
import dev.kvcache.tiered.StackedTierConfig.Upload;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Supplier;

/**
 * A tier over a backing tier, such as the disk tier over the object-storage tier: the lower tier of
 * a {@link TieredCache} that stacks three tiers (RAM → disk → object store).
 *
 * <p><b>Writes.</b> A put stores the block in the upper tier. Which blocks go up is {@link
 * StackedTierConfig#upload()}:
 *
 * <ul>
 *   <li>{@link Upload#EVERY_BLOCK}: each put queues its block's upload; upload threads read it
 *       back from the upper tier (a disk tier's lease maps the file, so nothing is copied) and put
 *       it in the backing tier. A block the upper tier no longer holds when its turn comes is not
 *       uploaded.
 *   <li>{@link Upload#EVICTED}: the upper tier hands over each block it evicts, as a lease on its
 *       bytes ({@link Tier#onEviction}), and upload threads put it in the backing tier and let
 *       the lease go, unless the backing tier holds it already (a block read from it earlier). A
 *       put of a key the backing tier holds deletes its older copy there.
 * </ul>
 *
 * <p>A block that finds the upload queue ({@link StackedTierConfig}) full is not uploaded ({@link
 * StackedStats#uploadsDropped()}).
 *
 * <p><b>Reads.</b> The upper tier first, then a block it evicted that waits for its upload (with
 * {@link Upload#EVICTED}: until the backing tier has it, it is read from the upper tier's lease,
 * and a RAM tier above that evicts its own copy need not write it down again), then the backing
 * tier.
 * A block of the backing tier is not copied into the upper one: the RAM tier above keeps it while
 * it is hot. A read served above the backing tier is passed on to it as a use ({@link
 * Tier#usedAbove}), so that a backing tier that evicts by recency keeps the blocks hot above it:
 * they are what the fleet needs when a server leaves.
 *
 * <p><b>Never stale bytes.</b> From a put or delete of a key until the backing tier has the new
 * block, or has dropped its older one, reads do not look in the backing tier for that key. Uploads
 * of one key never run at once, and a delete waits for an upload of its key under way.
 *
 * <p>Closing uploads what is queued, then closes both tiers.
 *
 * <p>This class holds the writes, the uploads, the reads and the pins of the two tiers (over 700
 * lines): the uploads (the queue's turns, the evicted blocks waiting, settling a key's backing
 * copy) are the part to move into a class of their own.
 */
public final class StackedTier implements Tier {

  private final Tier upper;
  private final Tier backing;
  private final StackedTierConfig config;
  private final KeyStripes stripes = new KeyStripes();
  /**
   * Keys whose copy in the backing tier may be older than the upper tier's, by the version of the
   * put or delete that made it so: reads do not look for them in the backing tier.
   */
  private final ConcurrentHashMap<BlockKey, Long> unsettled = new ConcurrentHashMap<>();
  private final AtomicLong versions = new AtomicLong();
  private final UploadQueue uploads;
  private final TierCounters counters = new TierCounters();
  private final LongAdder upperHits = new LongAdder();
  private final LongAdder backingHits = new LongAdder();
  private final LongAdder uploaded = new LongAdder();
  private final LongAdder uploadFailures = new LongAdder();
  /** Upper-tier leases the upload threads hold: not the caller's. */
  private final AtomicInteger uploadLeases = new AtomicInteger();
  /**
   * Held shared while an upload lease opens or closes with its count, and exclusively while {@link
   * #stats} reads the tiers' open leases and that count.
   */
  private final ReentrantReadWriteLock uploadLeaseCount = new ReentrantReadWriteLock();
  /**
   * With {@link Upload#EVICTED}: evicted blocks waiting for their upload, under the upper tier's
   * leases, which reads share until the upload is done.
   */
  private final ConcurrentHashMap<BlockKey, SpillEntry> evicted = new ConcurrentHashMap<>();
  private final boolean evictedOnly;
  private volatile boolean closed;

  /**
   * A tier of {@code upper} over {@code backing}, which it now owns: closing it closes both.
   */
  public StackedTier(Tier upper, Tier backing, StackedTierConfig config) {
    this.upper = Objects.requireNonNull(upper, "upper");
    this.backing = Objects.requireNonNull(backing, "backing");
    this.config = Objects.requireNonNull(config, "config");
    this.evictedOnly = config.upload() == Upload.EVICTED;
    if (evictedOnly && !upper.onEviction(this::evictedAbove)) {
      throw new IllegalArgumentException("the " + upper.name() + " tier does not report what it"
          + " evicts: it cannot upload only its evicted blocks");
    }
    this.uploads = new UploadQueue(config.uploadQueueBlocks(), config.uploadThreads(),
        upper.name() + "-to-" + backing.name(),
        evictedOnly ? this::uploadEvicted : this::upload);
  }

  @Override
  public String name() {
    return upper.name() + "+" + backing.name();
  }

  /** The sum of the tiers' budgets. */
  @Override
  public long capacityBytes() {
    return upper.capacityBytes() + backing.capacityBytes();
  }

  /** The upper tier's limit: every block goes there first. */
  @Override
  public int maxBlockBytes() {
    return upper.maxBlockBytes();
  }

  @Override
  public PutStatus put(BlockKey key, ByteBuffer src) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(src, "src");
    ensureOpen();
    if (!PutChecks.fits(key, src.remaining(), maxBlockBytes(), counters)) {
      return PutStatus.REJECTED_TOO_LARGE; // nothing changes
    }
    return store(key, () -> upper.put(key, src));
  }

  /** As {@link #put}, the upper tier checking the bytes as it stores them. */
  @Override
  public PutStatus putChecked(BlockKey key, ByteBuffer src, int crc32c) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(src, "src");
    ensureOpen();
    if (!PutChecks.fits(key, src.remaining(), maxBlockBytes(), counters)) {
      return PutStatus.REJECTED_TOO_LARGE; // nothing changes
    }
    return store(key, () -> upper.putChecked(key, src, crc32c));
  }

  @Override
  public BlockWriter writer(BlockKey key, int length) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    BlockWriter inUpper = upper.writer(key, length);
    return inUpper.rejection().isPresent() ? inUpper : new UploadingWriter(inUpper);
  }

  /** Stores a block in the upper tier with {@code put}, and queues its upload. */
  private PutStatus store(BlockKey key, Supplier<PutStatus> put) {
    long version;
    ReentrantLock lock = stripes.lock(KeyStripes.of(key));
    lock.lock();
    try {
      version = versions.incrementAndGet();
      unsettled.put(key, version);
    } finally {
      lock.unlock();
    }
    PutStatus status;
    try {
      status = put.get();
    } catch (RuntimeException e) {
      unsettled.remove(key, version); // nothing changed
      throw e;
    }
    if (status == PutStatus.STORED || status == PutStatus.NOT_ADMITTED) {
      counters.put();
    } else {
      counters.rejection();
    }
    if (evictedOnly) {
      // an older block of the key, evicted and waiting for upload or in the backing tier, is stale
      cancelUpload(key);
      if (backing.contains(key)) {
        settleByDeleting(key, version);
      } else {
        unsettled.remove(key, version);
      }
      return status;
    }
    if (status != PutStatus.STORED || !uploads.offer(key)) {
      // not in the upper tier, or no room to queue its upload: the backing tier's copy, if any,
      // is older than what was put
      settleByDeleting(key, version);
    }
    return status;
  }

  /** An upload thread's turn for a key. */
  private void upload(BlockKey key) {
    Long version = unsettled.get(key);
    if (version == null) {
      return;
    }
    BlockLease lease = openUploadLease(key);
    try {
      if (lease.status() != GetStatus.HIT) {
        uploads.dropped();
        settleByDeleting(key, version);
        return;
      }
      if (!putBelow(key, lease.bytes())) {
        backing.delete(key); // it may hold an older copy
      }
      // a put that came meanwhile queued its own upload, which leaves its version; a delete waits
      // for this upload to end before it deletes
      unsettled.remove(key, version);
    } finally {
      closeUploadLease(lease);
    }
  }

  /**
   * An upload thread's lease on the upper tier's block, counted in {@link #uploadLeases} together
   * with its opening, so that {@link #stats} never sees one without the other.
   */
  private BlockLease openUploadLease(BlockKey key) {
    uploadLeaseCount.readLock().lock();
    try {
      BlockLease lease = upper.get(key);
      if (lease.status() == GetStatus.HIT) {
        uploadLeases.incrementAndGet();
      }
      return lease;
    } finally {
      uploadLeaseCount.readLock().unlock();
    }
  }

  private void closeUploadLease(BlockLease lease) {
    uploadLeaseCount.readLock().lock();
    try {
      boolean counted = lease.status() == GetStatus.HIT;
      lease.close();
      if (counted) {
        uploadLeases.decrementAndGet();
      }
    } finally {
      uploadLeaseCount.readLock().unlock();
    }
  }

  /**
   * Takes an evicted block from the upper tier (with {@link Upload#EVICTED}) and queues its upload;
   * the lease is let go once it is uploaded, or at once if the queue is full.
   */
  private void evictedAbove(BlockLease lease) {
    BlockKey key = lease.key();
    if (closed) {
      uploads.dropped();
      lease.close();
      return;
    }
    if (backing.contains(key)) {
      lease.close(); // the same block: a put of the key deletes the backing tier's older copy
      return;
    }
    SpillEntry waiting = SpillEntry.evicted(lease);
    ReentrantLock lock = stripes.lock(KeyStripes.of(key));
    lock.lock();
    try {
      // the upper tier hands an eviction over after it took the block out: a put of the key under
      // way or done since then holds a newer block, which the evicted one must not replace below
      // (a put before this point cancels the upload itself)
      if (unsettled.containsKey(key) || upper.contains(key)) {
        lease.close();
        return;
      }
      SpillEntry older = evicted.put(key, waiting);
      if (older != null) {
        older.release();
      }
    } finally {
      lock.unlock();
    }
    if (!uploads.offer(key) && evicted.remove(key, waiting)) {
      waiting.release();
    }
  }

  /**
   * An upload thread's turn for an evicted block, which reads find among those waiting until the
   * backing tier has it.
   */
  private void uploadEvicted(BlockKey key) {
    SpillEntry waiting = evicted.get(key);
    if (waiting == null || !waiting.tryRetain()) {
      return; // cancelled by a put or delete of the key
    }
    try {
      putBelow(key, waiting.bytes());
    } finally {
      waiting.release();
      if (evicted.remove(key, waiting)) {
        waiting.release();
      }
    }
  }

  /**
   * Takes the key's upload out of the queue, waits for one under way, and lets go of an evicted
   * block waiting for it.
   */
  private void cancelUpload(BlockKey key) {
    try {
      uploads.cancel(key);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for an upload of " + key, e);
    }
    SpillEntry waiting = evicted.remove(key);
    if (waiting != null) {
      uploads.dropped();
      waiting.release();
    }
  }

  /** Puts a block in the backing tier, counting the upload or its failure; whether it is stored. */
  private boolean putBelow(BlockKey key, ByteBuffer bytes) {
    PutStatus status;
    try {
      status = backing.put(key, bytes);
    } catch (RuntimeException e) {
      status = null;
    }
    if (status == PutStatus.STORED) {
      uploaded.increment();
      return true;
    }
    uploadFailures.increment();
    return false;
  }

  /** Deletes the key's copy in the backing tier, then lets reads look there again. */
  private void settleByDeleting(BlockKey key, long version) {
    backing.delete(key);
    unsettled.remove(key, version);
  }

  /**
   * Deletes the key from both tiers. An upload of it that is queued is cancelled, and one under
   * way is waited for, so that it cannot bring the block back into the backing tier.
   */
  @Override
  public boolean delete(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    long version;
    ReentrantLock lock = stripes.lock(KeyStripes.of(key));
    lock.lock();
    try {
      version = versions.incrementAndGet();
      unsettled.put(key, version);
    } finally {
      lock.unlock();
    }
    cancelUpload(key);
    boolean removed = upper.delete(key);
    removed |= backing.delete(key);
    unsettled.remove(key, version);
    if (removed) {
      counters.delete();
    }
    return removed;
  }

  @Override
  public BlockLease get(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    BlockLease lease = leaseAbove(key);
    if (lease.status() == GetStatus.HIT) {
      upperHits.increment();
    } else if (!unsettled.containsKey(key)) {
      lease = backing.get(key);
      if (lease.status() == GetStatus.HIT) {
        backingHits.increment();
      }
    }
    count(lease.status());
    return lease;
  }

  /**
   * Leases each block, as {@link #get} does: the upper tier's first, then the others in one
   * {@link Tier#getAll} call to the backing tier.
   */
  @Override
  public List<BlockLease> getAll(List<BlockKey> keys) {
    Objects.requireNonNull(keys, "keys");
    ensureOpen();
    return LeaseBatch.read(keys, i -> {
      BlockLease lease = leaseAbove(keys.get(i));
      if (lease.status() == GetStatus.HIT) {
        upperHits.increment();
      } else if (!unsettled.containsKey(keys.get(i))) {
        return null; // read in the backing tier
      }
      count(lease.status());
      return lease;
    }, backing::getAll, (i, lease) -> {
      if (lease.status() == GetStatus.HIT) {
        backingHits.increment();
      }
      count(lease.status());
      return lease;
    });
  }

  @Override
  public GetStatus getInto(BlockKey key, ByteBuffer dst) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(dst, "dst");
    ensureOpen();
    GetStatus status = upper.getInto(key, dst);
    if (status == GetStatus.MISS) {
      status = copyWaiting(key, dst);
    }
    if (status == GetStatus.HIT) {
      upperHits.increment();
      backing.usedAbove(key);
    } else if (status == GetStatus.MISS && !unsettled.containsKey(key)) {
      status = backing.getInto(key, dst);
      if (status == GetStatus.HIT) {
        backingHits.increment();
      }
    }
    count(status);
    return status;
  }

  /**
   * A lease on the upper tier's block, or on one it evicted that waits for its upload (a use of
   * the backing tier's copy, if any); a miss if neither holds it.
   */
  private BlockLease leaseAbove(BlockKey key) {
    BlockLease lease = upper.get(key);
    if (lease.status() != GetStatus.HIT) {
      lease.close();
      SpillEntry waiting = evicted.get(key);
      if (waiting == null || !waiting.tryRetain()) {
        return BlockLease.miss(key);
      }
      lease = new TieredLease(key, waiting.bytes(), waiting.lease().crc32c(), waiting::release);
    }
    backing.usedAbove(key);
    return lease;
  }

  /** Copies an evicted block waiting for its upload into {@code dst}; a miss if none waits. */
  private GetStatus copyWaiting(BlockKey key, ByteBuffer dst) {
    SpillEntry waiting = evicted.get(key);
    if (waiting == null || !waiting.tryRetain()) {
      return GetStatus.MISS;
    }
    try {
      if (dst.remaining() < waiting.size()) {
        return GetStatus.BUFFER_TOO_SMALL;
      }
      dst.put(waiting.bytes());
      return GetStatus.HIT;
    } finally {
      waiting.release();
    }
  }

  private void count(GetStatus status) {
    if (status == GetStatus.HIT) {
      counters.hit();
    } else if (status == GetStatus.MISS) {
      counters.miss();
    }
  }

  /** Passes the use on to both tiers. */
  @Override
  public void usedAbove(BlockKey key) {
    upper.usedAbove(key);
    backing.usedAbove(key);
  }

  @Override
  public boolean contains(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    return heldAbove(key) || !unsettled.containsKey(key) && backing.contains(key);
  }

  /** The leading keys either tier holds: runs of the upper tier's, then of the backing tier's. */
  @Override
  public int lookupPrefix(List<BlockKey> keys) {
    return locatePrefix(keys).blocks();
  }

  @Override
  public PrefixLocation locatePrefix(List<BlockKey> keys) {
    Objects.requireNonNull(keys, "keys");
    ensureOpen();
    PrefixLocation found = PrefixLocation.NONE;
    int n = 0;
    while (n < keys.size()) {
      PrefixLocation up = upper.locatePrefix(keys.subList(n, keys.size()));
      found = found.then(up);
      n += up.blocks();
      int settled = n;
      while (settled < keys.size() && !unsettled.containsKey(keys.get(settled))) {
        settled++;
      }
      if (settled == n) {
        break;
      }
      PrefixLocation down = backing.locatePrefix(keys.subList(n, settled));
      if (down.blocks() == 0) {
        break;
      }
      found = found.then(down);
      n += down.blocks();
    }
    return found;
  }

  /**
   * Pins the leading keys either tier holds, in runs as {@link #locatePrefix} finds them: the upper
   * tier's blocks under its leases, and each run of keys after one up to the next the upper tier
   * holds under the backing tier's pin (an object tier's pin marks its blocks used and fetches one
   * only when it is read). A key whose backing copy may be stale ends the pin. Each pinned block
   * counts as a hit, the first key not found as a miss.
   *
   * @throws IllegalArgumentException if {@code timeout} is not positive
   */
  @Override
  public PrefixPin pinPrefix(List<BlockKey> keys, Duration timeout) {
    Objects.requireNonNull(keys, "keys");
    PrefixPin.requirePositive(timeout);
    ensureOpen();
    TieredPin pinned = new TieredPin((key, bytes) -> {}); // blocks stay where they are
    try {
      int n = 0;
      while (n < keys.size()) {
        BlockLease above = leaseAbove(keys.get(n));
        if (above.status() == GetStatus.HIT) {
          pinned.add(above);
          upperHits.increment();
          counters.hit();
          n++;
          continue;
        }
        int end = n;
        while (end < keys.size() && !unsettled.containsKey(keys.get(end))
            && (end == n || !heldAbove(keys.get(end)))) {
          end++;
        }
        int held = end == n ? 0 : pinned.add(backing.pinPrefix(keys.subList(n, end), timeout));
        backingHits.add(held);
        counters.hits(held);
        n += held;
        if (held == 0 || n < end) {
          break; // neither tier holds keys[n]
        }
      }
      if (n < keys.size()) {
        counters.miss();
      }
      return PrefixPin.over(pinned, timeout);
    } catch (RuntimeException | Error e) {
      pinned.release();
      throw e;
    }
  }

  /** Whether the upper tier holds the key, or a block it evicted that waits for its upload. */
  private boolean heldAbove(BlockKey key) {
    return upper.contains(key) || evicted.containsKey(key);
  }

  /**
   * Reads, puts and deletes as the caller made them; blocks, bytes, capacity and evictions are the
   * tiers' sums; open leases are the caller's (not the upload threads').
   */
  @Override
  public CacheStats stats() {
    CacheStats u;
    CacheStats b;
    int heldByUploads;
    uploadLeaseCount.writeLock().lock();
    try {
      u = upper.stats();
      b = backing.stats();
      heldByUploads = uploadLeases.get();
    } finally {
      uploadLeaseCount.writeLock().unlock();
    }
    CacheStats own = counters.snapshot(u.blocks() + b.blocks(), u.bytesUsed() + b.bytesUsed(),
        u.capacityBytes() + b.capacityBytes(), u.compactions() + b.compactions(),
        u.bytesCompacted() + b.bytesCompacted());
    return new CacheStats(own.hits(), own.misses(), own.puts(), u.evictions() + b.evictions(),
        own.rejections(), own.deletes(), own.blocks(), own.bytesUsed(), own.capacityBytes(),
        Math.max(0, u.leasesOpen() + b.leasesOpen() - heldByUploads), own.compactions(),
        own.bytesCompacted());
  }

  /** The upper tier's own statistics. */
  public CacheStats upperStats() {
    return upper.stats();
  }

  /** The backing tier's own statistics. */
  public CacheStats backingStats() {
    return backing.stats();
  }

  /** How the uploads are doing. */
  public StackedStats stackedStats() {
    return new StackedStats(upperHits.sum(), backingHits.sum(), uploads.waiting(),
        uploaded.sum(), uploads.drops(), uploadFailures.sum());
  }

  /** The upper tier, as built. */
  public Tier upper() {
    return upper;
  }

  /** The backing tier, as built. */
  public Tier backing() {
    return backing;
  }

  @Override
  public CacheHealth health() {
    return upper.health().and(backing.name(), backing.health());
  }

  /**
   * Waits until the queued uploads are done, up to {@code millis}.
   *
   * @return whether none is left
   */
  public boolean awaitUploads(long millis) throws InterruptedException {
    return uploads.awaitIdle(millis);
  }

  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    uploads.close(config.closeWait().toMillis());
    for (BlockKey key : List.copyOf(evicted.keySet())) {
      SpillEntry left = evicted.remove(key);
      if (left != null) {
        left.release();
      }
    }
    try {
      upper.close();
    } finally {
      backing.close();
    }
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("the " + name() + " tier is closed");
    }
  }

  @Override
  public String toString() {
    return "StackedTier[" + upper + " over " + backing + ", " + config + "]";
  }

  /** A writer of the upper tier whose commit queues the block's upload. */
  private final class UploadingWriter implements BlockWriter {
    private final BlockWriter inUpper;

    UploadingWriter(BlockWriter inUpper) {
      this.inUpper = inUpper;
    }

    @Override
    public BlockKey key() {
      return inUpper.key();
    }

    @Override
    public int length() {
      return inUpper.length();
    }

    @Override
    public int remaining() {
      return inUpper.remaining();
    }

    @Override
    public Optional<PutStatus> rejection() {
      return inUpper.rejection();
    }

    @Override
    public void write(ByteBuffer src) {
      inUpper.write(src);
    }

    @Override
    public OptionalInt crc32c() {
      return inUpper.crc32c();
    }

    @Override
    public boolean commitMayWait() {
      return inUpper.commitMayWait();
    }

    @Override
    public boolean writesMayWait() {
      return inUpper.writesMayWait();
    }

    @Override
    public PutStatus commit() {
      ensureOpen();
      return store(inUpper.key(), inUpper::commit);
    }

    @Override
    public void close() {
      inUpper.close();
    }
  }
}
