package dev.kvcache.tiered;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.CacheStats;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.spi.Tier;
import dev.kvcache.tiered.StackedTierConfig.Upload;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The uploads of a {@link StackedTier} and what its reads must know of them: which keys' copy in
 * the backing tier may be older than the upper tier's ({@link #unsettled}), the queue of uploads
 * and the threads that run them, the evicted blocks waiting for their upload ({@link
 * Upload#EVICTED}), and the upper tier's leases the upload threads hold, which are not the caller's.
 *
 * <p>A put or delete of a key first marks it unsettled under a new version ({@link #unsettle});
 * the upload that puts its block in the backing tier, or the delete of the older copy there,
 * settles that version. Reads do not look in the backing tier for an unsettled key. Uploads of one
 * key never run at once ({@link UploadQueue}), and {@link #cancel} waits for one under way.
 *
 * <p>An upload the backing tier refuses or fails is tried again, up to {@link #UPLOAD_TRIES} times
 * in all, after {@link #FIRST_RETRY_NANOS}, then four times longer each time (about 21 seconds in
 * all): an object store that refuses a request now and then, or is down for a moment, still gets
 * the block. Meanwhile the key stays unsettled (the backing tier's older copy is superseded at the
 * first failure), and an evicted block keeps waiting with its lease.
 */
final class StackedUploads {

  /** How many times a block's upload is tried before it is given up (counted as dropped). */
  static final int UPLOAD_TRIES = 4;
  /** The delay before an upload is tried the second time; each later delay is four times longer. */
  static final long FIRST_RETRY_NANOS = 1_000_000_000L;

  /**
   * How often the upload of a key's block failed: {@code upload} is the put's version ({@link
   * Upload#EVERY_BLOCK}) or the evicted block waiting ({@link Upload#EVICTED}), so that a newer
   * block of the key starts counting again.
   */
  private record Tries(Object upload, int failed) {}

  private final Tier upper;
  private final Tier backing;
  private final KeyStripes stripes = new KeyStripes();
  /**
   * Keys whose copy in the backing tier may be older than the upper tier's, by the version of the
   * put or delete that made it so.
   */
  private final ConcurrentHashMap<BlockKey, Long> unsettled = new ConcurrentHashMap<>();
  private final AtomicLong versions = new AtomicLong();
  private final UploadQueue queue;
  private final LongAdder uploaded = new LongAdder();
  private final LongAdder failures = new LongAdder();
  private final LongAdder retried = new LongAdder();
  private final ConcurrentHashMap<BlockKey, Tries> tries = new ConcurrentHashMap<>();
  /** Upper-tier leases the upload threads hold: not the caller's. */
  private final AtomicInteger uploadLeases = new AtomicInteger();
  /**
   * Held shared while an upload lease opens or closes with its count, and exclusively while {@link
   * #tierStats} reads the tiers' open leases and that count.
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
   * The uploads from {@code upper} to {@code backing}; with {@link Upload#EVICTED}, from the
   * blocks the upper tier evicts.
   *
   * @throws IllegalArgumentException if uploads of evicted blocks are asked of an upper tier that
   *     does not report its evictions
   */
  StackedUploads(Tier upper, Tier backing, StackedTierConfig config) {
    this.upper = upper;
    this.backing = backing;
    this.evictedOnly = config.upload() == Upload.EVICTED;
    if (evictedOnly && !upper.onEviction(this::evictedAbove)) {
      throw new IllegalArgumentException("the " + upper.name() + " tier does not report what it"
          + " evicts: it cannot upload only its evicted blocks");
    }
    this.queue = new UploadQueue(config.uploadQueueBlocks(), config.uploadThreads(),
        upper.name() + "-to-" + backing.name(),
        evictedOnly ? this::uploadEvicted : this::upload);
  }

  /**
   * Marks the key's backing copy as possibly stale, before a put or delete changes the upper
   * tier's block.
   *
   * @return the version that {@link #settled} or {@link #stored} settles
   */
  long unsettle(BlockKey key) {
    ReentrantLock lock = stripes.lock(KeyStripes.of(key));
    lock.lock();
    try {
      long version = versions.incrementAndGet();
      unsettled.put(key, version);
      return version;
    } finally {
      lock.unlock();
    }
  }

  /** Lets reads look in the backing tier for the key again, unless a later change unsettled it. */
  void settled(BlockKey key, long version) {
    unsettled.remove(key, version);
  }

  /** Whether the key's copy in the backing tier may be older than the upper tier's. */
  boolean unsettled(BlockKey key) {
    return unsettled.containsKey(key);
  }

  /**
   * After a put of the key in the upper tier that ended with {@code status}: queues its upload
   * ({@link Upload#EVERY_BLOCK}), or drops the backing tier's older copy where none will replace
   * it.
   */
  void stored(BlockKey key, long version, PutStatus status) {
    if (evictedOnly) {
      // an older block of the key, evicted and waiting for upload or in the backing tier, is stale
      cancel(key);
      if (backing.contains(key)) {
        settleBySuperseding(key, version);
      } else {
        unsettled.remove(key, version);
      }
      return;
    }
    if (status != PutStatus.STORED || !queue.offer(key)) {
      // not in the upper tier, or no room to queue its upload: the backing tier's copy, if any,
      // is older than what was put
      settleBySuperseding(key, version);
    }
  }

  /** An evicted block of the key waiting for its upload, or null. */
  SpillEntry waiting(BlockKey key) {
    return evicted.get(key);
  }

  /**
   * Takes the key's upload out of the queue, waits for one under way, and lets go of an evicted
   * block waiting for it.
   */
  void cancel(BlockKey key) {
    try {
      queue.cancel(key);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for an upload of " + key, e);
    }
    tries.remove(key);
    SpillEntry waiting = evicted.remove(key);
    if (waiting != null) {
      queue.dropped();
      waiting.release();
    }
  }

  /** An upload thread's turn for a key. */
  private void upload(BlockKey key) {
    Long version = unsettled.get(key);
    if (version == null) {
      tries.remove(key);
      return;
    }
    BlockLease lease = openUploadLease(key);
    try {
      if (lease.status() != GetStatus.HIT) {
        tries.remove(key);
        queue.dropped();
        settleBySuperseding(key, version);
        return;
      }
      if (!putBelow(key, lease.bytes())) {
        backing.supersede(key); // it may hold an older copy
        if (retryLater(key, version)) {
          return; // the key stays unsettled until its block is up, or given up
        }
      }
      tries.remove(key);
      // a put that came meanwhile queued its own upload, which leaves its version; a delete waits
      // for this upload to end before it deletes
      unsettled.remove(key, version);
    } finally {
      closeUploadLease(lease);
    }
  }

  /**
   * After a failed upload of {@code upload} (a version, or an evicted block) of the key: queues it
   * again after its delay, unless it has had its {@link #UPLOAD_TRIES} or the queue has no room.
   *
   * @return whether it will be tried again
   */
  private boolean retryLater(BlockKey key, Object upload) {
    Tries t = tries.merge(key, new Tries(upload, 1), (old, first) ->
        old.upload().equals(upload) ? new Tries(upload, old.failed() + 1) : first);
    if (t.failed() >= UPLOAD_TRIES) {
      queue.dropped();
      return false;
    }
    if (!queue.retryLater(key, FIRST_RETRY_NANOS << (2 * (t.failed() - 1)))) {
      return false;
    }
    retried.increment();
    return true;
  }

  /**
   * An upload thread's lease on the upper tier's block, counted in {@link #uploadLeases} together
   * with its opening, so that {@link #tierStats} never sees one without the other.
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
      queue.dropped();
      lease.close();
      return;
    }
    if (backing.contains(key)) {
      lease.close(); // the same block: a put of the key supersedes the backing tier's older copy
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
    if (!queue.offer(key) && evicted.remove(key, waiting)) {
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
      tries.remove(key);
      return; // cancelled by a put or delete of the key
    }
    boolean again = false;
    try {
      again = !putBelow(key, waiting.bytes()) && retryLater(key, waiting);
    } finally {
      waiting.release();
      if (!again) {
        tries.remove(key);
        if (evicted.remove(key, waiting)) {
          waiting.release();
        }
      }
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
    failures.increment();
    return false;
  }

  /**
   * Supersedes the key's copy in the backing tier ({@link Tier#supersede}: deleted, unless the
   * backing tier keeps copies named by content), then lets reads look there again.
   */
  private void settleBySuperseding(BlockKey key, long version) {
    backing.supersede(key);
    unsettled.remove(key, version);
  }

  /** Both tiers' statistics and the upload threads' leases among them, read at one moment. */
  record TierStats(CacheStats upper, CacheStats backing, int heldByUploads) {}

  /** Both tiers' statistics, with the leases the upload threads hold at that moment. */
  TierStats tierStats() {
    uploadLeaseCount.writeLock().lock();
    try {
      return new TierStats(upper.stats(), backing.stats(), uploadLeases.get());
    } finally {
      uploadLeaseCount.writeLock().unlock();
    }
  }

  /** How the uploads are doing, with the reads' hits in each tier. */
  StackedStats stats(long upperHits, long backingHits) {
    return new StackedStats(upperHits, backingHits, queue.waiting(), uploaded.sum(), queue.drops(),
        failures.sum(), retried.sum());
  }

  /**
   * Waits until the queued uploads are done, up to {@code millis}.
   *
   * @return whether none is left
   */
  boolean awaitIdle(long millis) throws InterruptedException {
    return queue.awaitIdle(millis);
  }

  /**
   * Runs what is queued for up to {@code waitMillis}, stops the threads, and lets go of the
   * evicted blocks left waiting; evictions handed over after this are not uploaded.
   */
  void close(long waitMillis) {
    closed = true;
    queue.close(waitMillis);
    for (BlockKey key : List.copyOf(evicted.keySet())) {
      SpillEntry left = evicted.remove(key);
      if (left != null) {
        left.release();
      }
    }
  }
}
