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
import dev.kvcache.spi.AbstractTier;
import dev.kvcache.spi.BlockListener;
import dev.kvcache.spi.ForwardingBlockWriter;
import dev.kvcache.spi.NamespaceRemoval;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierVisitor;
import dev.kvcache.tiered.StackedTierConfig.Upload;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
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
 *       put of a key the backing tier holds supersedes its older copy there ({@link
 *       Tier#supersede}).
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
 * <p>The uploads, and what reads must know of them (which keys' backing copies may be stale, the
 * evicted blocks waiting), are a {@link StackedUploads}; this class holds the writes, the reads
 * and the pins of the two tiers.
 */
public final class StackedTier extends AbstractTier {

  private final Tier upper;
  private final Tier backing;
  private final StackedTierConfig config;
  private final StackedUploads uploads;
  private final LongAdder upperHits = new LongAdder();
  private final LongAdder backingHits = new LongAdder();
  private volatile boolean closed;

  /**
   * A tier of {@code upper} over {@code backing}, which it now owns: closing it closes both.
   */
  public StackedTier(Tier upper, Tier backing, StackedTierConfig config) {
    this.upper = Objects.requireNonNull(upper, "upper");
    this.backing = Objects.requireNonNull(backing, "backing");
    this.config = Objects.requireNonNull(config, "config");
    this.uploads = new StackedUploads(upper, backing, config);
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
  protected PutStatus store(BlockKey key, ByteBuffer src) {
    return storeAbove(key, () -> upper.put(key, src));
  }

  /** As {@link #put}, the upper tier checking the bytes as it stores them. */
  @Override
  protected PutStatus storeChecked(BlockKey key, ByteBuffer src, int crc32c) {
    return storeAbove(key, () -> upper.putChecked(key, src, crc32c));
  }

  @Override
  protected BlockWriter openWriter(BlockKey key, int length) {
    BlockWriter inUpper = upper.writer(key, length);
    return inUpper.rejection().isPresent() ? inUpper : new UploadingWriter(inUpper);
  }

  /** Stores a block in the upper tier with {@code put}, and queues its upload. */
  private PutStatus storeAbove(BlockKey key, Supplier<PutStatus> put) {
    long version = uploads.unsettle(key);
    PutStatus status;
    try {
      status = put.get();
    } catch (RuntimeException e) {
      uploads.settled(key, version); // nothing changed
      throw e;
    }
    if (status == PutStatus.STORED || status == PutStatus.NOT_ADMITTED) {
      counters().put();
    } else {
      counters().rejection();
    }
    uploads.stored(key, version, status);
    return status;
  }

  /**
   * Deletes the key from both tiers. An upload of it that is queued is cancelled, and one under
   * way is waited for, so that it cannot bring the block back into the backing tier.
   */
  @Override
  protected boolean remove(BlockKey key) {
    boolean removed = dropCopies(key, backing::delete);
    if (removed) {
      counters().delete();
    }
    return removed;
  }

  /**
   * As {@link #delete}, with the backing tier superseding its copy ({@link Tier#supersede}) rather
   * than deleting it: a put above replaces the key.
   */
  @Override
  public boolean supersede(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    return dropCopies(key, backing::supersede);
  }

  /**
   * Cancels the key's upload (waiting for one under way), deletes it from the upper tier and drops
   * it from the backing tier with {@code below}; whether a copy was removed.
   */
  private boolean dropCopies(BlockKey key, Predicate<BlockKey> below) {
    long version = uploads.unsettle(key);
    uploads.cancel(key);
    boolean removed = upper.delete(key);
    removed |= below.test(key);
    uploads.settled(key, version);
    return removed;
  }

  @Override
  protected BlockLease lease(BlockKey key) {
    BlockLease lease = leaseAbove(key);
    if (lease.status() == GetStatus.HIT) {
      upperHits.increment();
    } else if (!uploads.unsettled(key)) {
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
  protected List<BlockLease> leaseAll(List<BlockKey> keys) {
    return LeaseBatch.read(keys, i -> {
      BlockLease lease = leaseAbove(keys.get(i));
      if (lease.status() == GetStatus.HIT) {
        upperHits.increment();
      } else if (!uploads.unsettled(keys.get(i))) {
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
  protected GetStatus copyInto(BlockKey key, ByteBuffer dst) {
    GetStatus status = upper.getInto(key, dst);
    if (status == GetStatus.MISS) {
      status = copyWaiting(key, dst);
    }
    if (status == GetStatus.HIT) {
      upperHits.increment();
      backing.usedAbove(key);
    } else if (status == GetStatus.MISS && !uploads.unsettled(key)) {
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
      SpillEntry waiting = uploads.waiting(key);
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
    SpillEntry waiting = uploads.waiting(key);
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
      counters().hit();
    } else if (status == GetStatus.MISS) {
      counters().miss();
    }
  }

  /** Passes the use on to both tiers. */
  @Override
  public void usedAbove(BlockKey key) {
    upper.usedAbove(key);
    backing.usedAbove(key);
  }

  @Override
  protected boolean holds(BlockKey key) {
    return heldAbove(key) || !uploads.unsettled(key) && backing.contains(key);
  }

  /** The leading keys either tier holds: runs of the upper tier's, then of the backing tier's. */
  @Override
  protected int countPrefix(List<BlockKey> keys) {
    return locate(keys).blocks();
  }

  @Override
  protected PrefixLocation locate(List<BlockKey> keys) {
    PrefixLocation found = PrefixLocation.NONE;
    int n = 0;
    while (n < keys.size()) {
      PrefixLocation up = upper.locatePrefix(keys.subList(n, keys.size()));
      found = found.then(up);
      n += up.blocks();
      int settled = n;
      while (settled < keys.size() && !uploads.unsettled(keys.get(settled))) {
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
   */
  @Override
  protected PrefixPin pin(List<BlockKey> keys, Duration timeout) {
    TieredPin pinned = new TieredPin((key, bytes) -> {}); // blocks stay where they are
    return PrefixWalk.pin(keys, timeout, pinned, key -> {
      BlockLease above = leaseAbove(key);
      if (above.status() != GetStatus.HIT) {
        return null;
      }
      upperHits.increment();
      counters().hit();
      return above;
    }, this::heldAbove, key -> !uploads.unsettled(key), backing, backingHits, counters());
  }

  /** Whether the upper tier holds the key, or a block it evicted that waits for its upload. */
  private boolean heldAbove(BlockKey key) {
    return upper.contains(key) || uploads.waiting(key) != null;
  }

  /**
   * Reads, puts and deletes as the caller made them; blocks, bytes, capacity and evictions are the
   * tiers' sums; open leases are the caller's (not the upload threads').
   */
  @Override
  public CacheStats stats() {
    StackedUploads.TierStats both = uploads.tierStats();
    CacheStats u = both.upper();
    CacheStats b = both.backing();
    int heldByUploads = both.heldByUploads();
    CacheStats own = counters().snapshot(u.blocks() + b.blocks(), u.bytesUsed() + b.bytesUsed(),
        u.capacityBytes() + b.capacityBytes(), u.compactions() + b.compactions(),
        u.bytesCompacted() + b.bytesCompacted());
    return new CacheStats(own.hits(), own.misses(), own.puts(), u.evictions() + b.evictions(),
        own.rejections(), own.deletes(), own.blocks(), own.bytesUsed(), own.capacityBytes(),
        Math.max(0, u.leasesOpen() + b.leasesOpen() - heldByUploads), own.compactions(),
        own.bytesCompacted());
  }

  /**
   * Reports the upper tier and then the backing one, each with the reads it served, and the
   * uploads from one to the other.
   */
  @Override
  public void describe(TierVisitor visitor, LongSupplier hits) {
    upper.describe(visitor, upperHits::sum);
    backing.describe(visitor, backingHits::sum);
    String to = backing.name();
    visitor.counter("kvcache.uploads", "blocks uploaded from the " + upper.name() + " tier to the"
        + " tier below it", () -> stackedStats().uploaded(), "to", to);
    visitor.counter("kvcache.uploads.dropped", "blocks not uploaded: the upload queue was full,"
        + " the " + upper.name() + " tier no longer held them when their turn came, or the tier"
        + " below refused or failed each try", () -> stackedStats().uploadsDropped(), "to", to);
    visitor.counter("kvcache.uploads.failed", "uploads the tier below refused or failed, each"
        + " try counted", () -> stackedStats().uploadFailures(), "to", to);
    visitor.counter("kvcache.uploads.retried", "failed uploads queued to be tried again",
        () -> stackedStats().uploadsRetried(), "to", to);
    visitor.gauge("kvcache.uploads.waiting", "blocks queued for upload, being uploaded or waiting"
        + " to be tried again", () -> stackedStats().uploadsWaiting(), "to", to);
  }

  /**
   * Hands {@code listener} to the upper tier and to the backing one, which tell it by their own
   * names: an upload is a store in the backing tier while the upper keeps its copy.
   *
   * @return whether either tells
   */
  @Override
  public boolean listen(BlockListener listener) {
    boolean upperTells = upper.listen(listener);
    return backing.listen(listener) || upperTells;
  }

  /**
   * The capability of the upper tier, or else of the backing one; a {@link NamespaceRemoval}
   * covers both, the uploads under way included.
   */
  @Override
  public <C> Optional<C> capability(Class<C> type) {
    if (type == NamespaceRemoval.class) {
      return StackRemoval.of(upper, () -> awaitUploads(StackRemoval.DRAIN.toMillis()), backing)
          .map(type::cast);
    }
    return upper.capability(type).or(() -> backing.capability(type));
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
    return uploads.stats(upperHits.sum(), backingHits.sum());
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
    try {
      upper.close();
    } finally {
      backing.close();
    }
  }

  @Override
  protected void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("the " + name() + " tier is closed");
    }
  }

  @Override
  public String toString() {
    return "StackedTier[" + upper + " over " + backing + ", " + config + "]";
  }

  /** A writer of the upper tier whose commit queues the block's upload. */
  private final class UploadingWriter extends ForwardingBlockWriter {

    UploadingWriter(BlockWriter inUpper) {
      super(inUpper);
    }

    @Override
    public PutStatus commit() {
      ensureOpen();
      return storeAbove(delegate.key(), delegate::commit);
    }
  }
}
