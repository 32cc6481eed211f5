package dev.kvcache.tiered;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.PutStatus;
import dev.kvcache.spi.ChecksumMismatchException;
import dev.kvcache.spi.Tier;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The blocks on their way from RAM to the lower tier, and the spill threads that write them in the
 * order they came: blocks RAM evicted, and copies of blocks RAM still holds that a {@link
 * Durability#WRITE_BEHIND} put queued. A {@link Durability#WRITE_THROUGH} put lists its copy here
 * too, so that readers and later puts of the key find it, but writes it on its own thread.
 *
 * <p><b>Threads.</b> Each spill thread takes the oldest block waiting and writes it, so that
 * several blocks are written at once: a write into the page cache is a copy that keeps one core
 * busy, and one thread alone cannot keep up with a fast device. The queue lists one block per key
 * (a put or delete of the key cancels the one listed first, or waits for its write to end), so two
 * writes of one key never run at once.
 *
 * <p><b>Bounds.</b> Evicted blocks wait only while fewer than {@code maxEvictedBlocks} do, and
 * while all waiting blocks keep at most {@code maxBytes} of RAM pinned (unless the evicting put
 * has already waited as long as it may for room, when evicting frees nothing until they are
 * written); past that an evicted block is dropped ({@link #drops()}). Copies are never dropped:
 * their puts wait instead ({@link #awaitBacklog}).
 *
 * <p><b>Failures.</b> A write the lower tier refuses for lack of room ({@link
 * PutStatus#REJECTED_NO_SPACE}: a full disk, or a device whose writes fail) or that throws is
 * counted ({@link #failures()}) and kept as {@link #lastFailure()} until a write succeeds. An
 * evicted block that fails is lost; a copy that fails stays in RAM, not clean, so that its
 * eviction tries again, and counts as not safely written ({@link #failedCopies()}) until a write
 * of its key succeeds, a put or delete replaces it, or RAM evicts it. While writes fail, a spill
 * thread with nothing to do tries one such copy again now and then ({@link #RETRY_NANOS}), so
 * that the queue learns when the lower tier has recovered even if no put comes.
 */
final class SpillQueue {

  private static final Logger log = LoggerFactory.getLogger(SpillQueue.class);
  /** Longest single wait for progress: a notification missed costs no more than this. */
  private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(5);
  /** How often an idle spill thread tries a failed copy again while writes fail. */
  static final long RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);

  private final Tier lower;
  private final int maxEvictedBlocks;
  private final long maxBytes;
  /** Called on the writer's thread once a copy is stored below, before cancellers may go on. */
  private final Consumer<BlockKey> copyStored;
  /** Queues a copy of a key RAM holds again, for a retry while writes fail. */
  private final Consumer<BlockKey> retryCopy;
  /**
   * Keys whose copy the lower tier refused or failed to write, and that RAM still holds: their
   * puts were acknowledged, and RAM has the only copy.
   */
  private final Set<BlockKey> failedCopies = ConcurrentHashMap.newKeySet();
  /** Copies registered and not yet written (queued, being written, or listed). */
  private final AtomicInteger copiesWaiting = new AtomicInteger();
  private volatile long lastRetryNanos = System.nanoTime();
  private final LinkedBlockingQueue<SpillEntry> queue = new LinkedBlockingQueue<>();
  /** Blocks queued, being written, or listed by a write-through put, by key. */
  private final ConcurrentHashMap<BlockKey, SpillEntry> byKey = new ConcurrentHashMap<>();
  /** Evicted blocks registered and not yet written (queued or being written). */
  private final AtomicInteger evictedWaiting = new AtomicInteger();
  /** The bytes of all entries registered and not yet written. */
  private final AtomicLong bytes = new AtomicLong();
  /** The order entries were registered in, which bounds what write-behind puts leave unwritten. */
  private final SpillOrder order;
  /** Notified each time a write ends. */
  private final Object progress = new Object();
  private final Thread[] threads;
  private volatile boolean stopping;
  /** The last write's failure, until a write succeeds. */
  private volatile String lastFailure;

  private final LongAdder spills = new LongAdder();
  private final LongAdder copies = new LongAdder();
  private final LongAdder drops = new LongAdder();
  private final LongAdder failures = new LongAdder();

  SpillQueue(Tier lower, int maxEvictedBlocks, long maxBytes, int threads,
      Consumer<BlockKey> copyStored, Consumer<BlockKey> retryCopy) {
    this.lower = lower;
    this.maxEvictedBlocks = maxEvictedBlocks;
    this.maxBytes = maxBytes;
    this.order = new SpillOrder(maxEvictedBlocks, maxBytes);
    this.copyStored = copyStored;
    this.retryCopy = retryCopy;
    this.threads = new Thread[threads];
    for (int i = 0; i < threads; i++) {
      Thread t = new Thread(this::run, "kvcache-spill-" + lower.name() + "-" + i);
      t.setDaemon(true);
      this.threads[i] = t;
      t.start();
    }
  }

  /** The key's entry, or null. */
  SpillEntry find(BlockKey key) {
    return byKey.get(key);
  }

  boolean holds(BlockKey key) {
    return byKey.containsKey(key);
  }

  /** Blocks listed. */
  int size() {
    return byKey.size();
  }

  /** RAM bytes the waiting blocks keep pinned (or may: a copy pins memory once RAM evicts it). */
  long bytes() {
    return bytes.get();
  }

  /**
   * Whether the queue is at most half full, in evicted blocks and in bytes counting {@code more}:
   * the other half takes what a put evicts without dropping it.
   */
  boolean hasRoom(int more) {
    long queued = bytes.get();
    return evictedWaiting.get() * 2 < maxEvictedBlocks
        && (queued == 0 || (queued + more) * 2 <= maxBytes);
  }

  /**
   * Cancels the key's entry, or waits for a write of it under way to end.
   *
   * @return whether there was one
   */
  boolean cancel(BlockKey key) {
    SpillEntry entry = byKey.remove(key);
    if (entry != null) {
      entry.cancel(); // waits out a write under way, whose failure would list the key below
    }
    failedCopies.remove(key); // replaced or deleted: no longer an acknowledged block at risk
    return entry != null;
  }

  /**
   * As {@link #cancel}, for a thread that must not wait: false, and nothing done, if a write of the
   * key's entry is under way.
   */
  boolean tryCancel(BlockKey key) {
    SpillEntry entry = byKey.get(key);
    if (entry != null) {
      if (!entry.tryCancel()) {
        return false;
      }
      byKey.remove(key, entry);
    }
    failedCopies.remove(key);
    return true;
  }

  /**
   * Whether a {@link Durability#WRITE_BEHIND} put must be refused rather than stored: the lower
   * tier's writes fail, and a window of blocks already acknowledged (as many as the queue takes of
   * evicted blocks) is not safely written
   * (copies waiting, and copies that failed). Storing it would leave one more acknowledged block
   * that only RAM holds, past the bound the mode promises.
   */
  boolean refusesWriteBehind() {
    return lastFailure != null && failedCopies.size() + copiesWaiting.get() >= maxEvictedBlocks;
  }

  /** Acknowledged blocks whose copy the lower tier refused or failed to write, still in RAM. */
  int failedCopies() {
    return failedCopies.size();
  }

  /**
   * Whether a write-behind put of {@code length} bytes registered now would find {@link
   * #awaitBacklog} at least half way to either of its bounds: the blocks registered since the oldest
   * one not yet written, or their bytes with its own. Past half, its commit may wait for the
   * spill threads unless more than half a window of puts is written in between.
   */
  boolean backlogPastHalf(int length) {
    return order.pastHalf(length);
  }

  /**
   * A place in the queue's order for the copy of a {@link Durability#WRITE_BEHIND} put that must not
   * wait, taken before the put commits ({@link #queueCopy(SpillEntry, SpillOrder.Place)}) if the
   * backlog is under half of either bound ({@link #backlogPastHalf}); null otherwise. {@link
   * #awaitBacklog} up to this place then cannot wait, however many blocks register meanwhile. A
   * place not taken is given back with {@link #release}.
   */
  SpillOrder.Place reserve(int length) {
    return order.reserve(length);
  }

  /** Gives back a place, unless a copy took it: the blocks behind it no longer wait for it. */
  void release(SpillOrder.Place place) {
    if (order.giveBack(place)) {
      synchronized (progress) {
        progress.notifyAll();
      }
    }
  }

  /**
   * Takes a block RAM evicted, on the evicting thread (which holds RAM's index), without waiting:
   * queues it, or drops it if the queue is full ({@code pastWait}: the evicting put has waited as
   * long as it may, so the byte bound holds too), or lets it go if a copy of the key is already
   * listed. That copy is the same block (a put or delete of the key takes the key's entry away
   * before it changes RAM), listed by a put after the evicting thread looked ({@link #holds}); its
   * writer may need RAM's index to finish ({@code copyStored}), so the eviction must not wait for
   * it as {@link #list} would.
   *
   * @return false if a copy of the key was listed, and the block let go
   */
  boolean evicted(BlockLease lease, boolean pastWait) {
    SpillEntry entry = SpillEntry.evicted(lease);
    long queued = bytes.get();
    if (stopping) {
      drop(entry, "the cache is closing");
    } else if (pastWait && queued > 0 && queued + entry.size() > maxBytes) {
      drop(entry, "the spill queue holds " + queued + " of its " + maxBytes + " bytes");
    } else if (!tryIncrementBelow(evictedWaiting, maxEvictedBlocks)) {
      drop(entry, "the spill queue holds its " + maxEvictedBlocks + " evicted blocks");
    } else {
      register(entry);
      if (byKey.putIfAbsent(lease.key(), entry) != null) {
        finish(entry, true);
        return false;
      }
      queue.add(entry);
    }
    return true;
  }

  /**
   * Writes a block RAM evicted at once, on this thread (while the cache closes); unlisted, so that
   * nothing can cancel it.
   */
  void writeEvicted(BlockLease lease) {
    SpillEntry entry = SpillEntry.evicted(lease);
    evictedWaiting.incrementAndGet();
    register(entry);
    write(entry, false);
  }

  /** Queues a copy of a block RAM holds for the spill threads ({@link Durability#WRITE_BEHIND}). */
  void queueCopy(SpillEntry copy) {
    enqueue(copy);
  }

  /**
   * Queues a copy in the place its put {@link #reserve reserved}, which must be for its length.
   */
  void queueCopy(SpillEntry copy, SpillOrder.Place place) {
    order.take(place, copy);
    enqueue(copy);
  }

  /**
   * Lists a copy, so that readers and a put or delete of its key find it, and counts it as
   * waiting. A copy a {@link Durability#WRITE_THROUGH} put writes itself with {@link #writeNow}
   * stays listed until {@link #unlist}, or until a put or delete of the key cancels it; a queued
   * copy leaves the list once written. Its caller took the key's entry away, or found none, under
   * the key's stripe before it took the block from RAM: an entry found here is that block, evicted
   * by RAM since, and is cancelled (or its write waited out) for the copy.
   */
  void list(SpillEntry entry) {
    register(entry);
    SpillEntry older = byKey.put(entry.lease().key(), entry);
    if (older != null) {
      older.cancel();
    }
  }

  /**
   * Writes a block on this thread, unless another writer claimed it first (then waits for that
   * one) or a put or delete of the key cancelled it ({@link SpillEntry#cancelled()}).
   *
   * @param keepListed whether the block was {@link #list listed} and stays so until {@link
   *     #unlist}; false for a queued block, which leaves the list once written
   * @return what the lower tier answered; null if the write threw or the block was cancelled
   */
  PutStatus writeNow(SpillEntry entry, boolean keepListed) {
    if (entry.startWriting()) {
      write(entry, keepListed);
    } else if (keepListed && entry.cancelled()) {
      finish(entry, true); // a listed block has no other writer to let go of it
    }
    return entry.awaitOutcome();
  }

  /** Takes a listed block off the list; false if a put or delete of its key took it off first. */
  boolean unlist(SpillEntry entry) {
    return byKey.remove(entry.lease().key(), entry);
  }

  /**
   * Waits until at most a window of blocks (as many as the queue takes of evicted blocks)
   * registered up to {@code mine} (or, if null, up to
   * now) may still be unwritten, holding at most the queue's bytes (or only {@code mine} is,
   * whatever its size): the bound on what {@link Durability#WRITE_BEHIND} puts leave unwritten.
   * Blocks registered later do not count, so puts go on in the order they came: each waits for
   * the blocks before its own, not for those of puts that came after it.
   */
  void awaitBacklog(SpillEntry mine) {
    long[] upTo = order.upTo(mine);
    while (!stopping && order.over(upTo[0], upTo[1])) {
      if (!pause(POLL_NANOS)) {
        return;
      }
    }
  }

  /**
   * Waits until a write ends or a few milliseconds pass, unless {@code deadline} has passed.
   *
   * @return false once the deadline has passed (or the thread is interrupted, or the queue stops)
   */
  boolean awaitProgress(long deadline) {
    long left = deadline - System.nanoTime();
    return left > 0 && pause(Math.min(left, POLL_NANOS));
  }

  /**
   * Waits until a write ends or {@code nanos} pass. Without a deadline of its own: a thread held up
   * for longer than that between two waits (a busy machine) still waits again.
   *
   * @return false if the queue stops or the thread is interrupted
   */
  private boolean pause(long nanos) {
    if (stopping) {
      return false;
    }
    synchronized (progress) {
      try {
        TimeUnit.NANOSECONDS.timedWait(progress, nanos);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return true;
  }

  /**
   * Waits until every block listed so far is written or dropped.
   *
   * @return false if blocks were still listed after {@code timeout}
   */
  boolean awaitEmpty(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!byKey.isEmpty()) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(1);
    }
    return true;
  }

  /** Evicted blocks written. */
  long spills() {
    return spills.sum();
  }

  /** Copies written. */
  long copies() {
    return copies.sum();
  }

  /** Evicted blocks that reached no tier: the queue was full, or the lower tier refused them. */
  long drops() {
    return drops.sum();
  }

  /** Writes the lower tier refused for lack of room, or that threw. */
  long failures() {
    return failures.sum();
  }

  /** Why the last write failed, while no write has succeeded since; null otherwise. */
  String lastFailure() {
    return lastFailure;
  }

  /** Stops the spill threads, then writes what is still queued on this thread. */
  void close() {
    stopping = true;
    for (Thread t : threads) {
      try {
        t.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    for (SpillEntry left; (left = queue.poll()) != null; ) {
      writeQueued(left);
    }
  }

  private void enqueue(SpillEntry entry) {
    list(entry);
    queue.add(entry);
  }

  /** Counts an entry as waiting to be written, and gives it its place, until {@link #finish}. */
  private void register(SpillEntry entry) {
    if (entry.isCopy()) {
      copiesWaiting.incrementAndGet();
    }
    order.register(entry);
    bytes.addAndGet(entry.size());
  }

  private void drop(SpillEntry entry, String why) {
    drops.increment();
    failedCopies.remove(entry.lease().key()); // evicted: RAM no longer holds it
    log.debug("dropped {} on its way to the {} tier: {}", entry.lease().key(), lower.name(), why);
    entry.release();
  }

  private void run() {
    while (true) {
      SpillEntry entry;
      try {
        entry = queue.poll(100, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        return;
      }
      if (entry != null) {
        writeQueued(entry);
      } else if (stopping) {
        return;
      } else {
        retryFailedCopy();
      }
    }
  }

  /** While writes fail, queues one failed copy again, at most every {@link #RETRY_NANOS}. */
  private void retryFailedCopy() {
    long now = System.nanoTime();
    if (lastFailure == null || failedCopies.isEmpty() || now - lastRetryNanos < RETRY_NANOS) {
      return;
    }
    lastRetryNanos = now;
    for (BlockKey key : failedCopies) {
      if (!byKey.containsKey(key)) {
        retryCopy.accept(key);
        return;
      }
    }
  }

  private void writeQueued(SpillEntry entry) {
    if (entry.startWriting()) {
      write(entry, false);
    } else if (entry.cancelled()) {
      finish(entry, false);
    } // else a put's own thread claimed it (writeNow) and lets go of it
  }

  /** Writes a claimed entry and lets go of it; {@code keepListed} leaves it for {@link #unlist}. */
  private void write(SpillEntry entry, boolean keepListed) {
    BlockKey key = entry.lease().key();
    PutStatus status = null;
    try {
      status = SpillEntry.putDown(lower, entry.lease(), entry.bytes());
      if (status == PutStatus.STORED) {
        lastFailure = null;
        failedCopies.remove(key);
        if (entry.isCopy()) {
          copies.increment();
          copyStored.accept(key);
        } else {
          spills.increment();
        }
      } else {
        if (status == PutStatus.REJECTED_NO_SPACE) {
          failed(key, "the " + lower.name() + " tier has no room for it");
        }
        if (!entry.isCopy()) {
          drops.increment();
        }
        log.debug("{} not written: the {} tier answered {}", key, lower.name(), status);
      }
    } catch (ChecksumMismatchException e) {
      if (!entry.isCopy()) {
        drops.increment();
      }
      log.warn("{} not written to the {} tier: its bytes in RAM no longer have their CRC32C",
          key, lower.name());
    } catch (RuntimeException e) {
      failed(key, e.toString());
      if (!entry.isCopy()) {
        drops.increment();
      }
      log.warn("writing {} to the {} tier failed: {}", key, lower.name(), e.toString());
    } finally {
      if (!entry.isCopy() && status != PutStatus.STORED) {
        failedCopies.remove(key); // evicted: RAM no longer holds it
      } else if (entry.isCopy() && !keepListed
          && (status == null || status == PutStatus.REJECTED_NO_SPACE)) {
        // written behind and failed: RAM keeps the only copy of an acknowledged block (a copy
        // written through fails its put instead, which takes the block out of RAM)
        failedCopies.add(key);
      }
      entry.finishWriting(status);
      finish(entry, keepListed);
    }
  }

  private void failed(BlockKey key, String why) {
    failures.increment();
    if (lastFailure == null) {
      log.warn("writing {} to the {} tier failed: {}", key, lower.name(), why);
    }
    lastFailure = why;
  }

  private void finish(SpillEntry entry, boolean keepListed) {
    if (!keepListed) {
      byKey.remove(entry.lease().key(), entry);
    }
    if (entry.isCopy()) {
      copiesWaiting.decrementAndGet();
    } else {
      evictedWaiting.decrementAndGet();
    }
    order.written(entry);
    bytes.addAndGet(-entry.size());
    entry.release();
    synchronized (progress) {
      progress.notifyAll();
    }
  }

  private static boolean tryIncrementBelow(AtomicInteger counter, int limit) {
    for (int n = counter.get(); n < limit; n = counter.get()) {
      if (counter.compareAndSet(n, n + 1)) {
        return true;
      }
    }
    return false;
  }
}
