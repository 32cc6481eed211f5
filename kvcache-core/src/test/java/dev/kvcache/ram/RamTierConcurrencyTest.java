package dev.kvcache.ram;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.CacheStats;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.testkit.LeakCheck;
import dev.kvcache.testkit.Payloads;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Eight threads hammer one RAM tier with puts, leases, copying reads, deletes and lookups, while a
 * reference model checks every read: a thread's own keys must read back as a miss or exactly the
 * version it last stored; shared keys as some version that was put under them.
 *
 * <p>Threads also hold some leases across later operations (while other threads delete, evict and
 * compact) and verify them again before closing.
 *
 * <p>The workload runs twice: on a 32 MiB tier, about a third of the key space, so that eviction
 * and compaction run all the time (a lease or copying read that outlives its block's removal must
 * keep its bytes where they are), and on a tier large enough for every key, which isolates the
 * read and write paths from eviction and compaction.
 */
class RamTierConcurrencyTest {

  @RegisterExtension static final LeakCheck LEAKS = new LeakCheck();

  private static final int THREADS = 8;
  private static final long DURATION_NANOS = TimeUnit.SECONDS.toNanos(3);
  private static final int MAX_OPS_PER_THREAD = 100_000;

  private static final long CAPACITY = 32L << 20;
  private static final int MIN_BLOCK = 64 << 10;
  private static final int MAX_BLOCK = 512 << 10;
  /** About 3x the capacity at the average block size (288 KiB): 8 x 40 owned plus 24 shared. */
  private static final int OWNED_PER_THREAD = 40;
  private static final int SHARED = 24;

  private RamTier tier;
  private final BlockKey[] sharedKeys = new BlockKey[SHARED];
  /** Highest version issued for each shared key; versions are issued before they are put. */
  private final AtomicLong[] sharedIssued = new AtomicLong[SHARED];

  private final AtomicLong hitsVerified = new AtomicLong();
  private final AtomicLong heldLeasesVerified = new AtomicLong();
  private final AtomicLong rejectedNoSpace = new AtomicLong();

  /** What one worker did, for the final report. */
  private record Result(int ops) {}

  @Test
  void underEvictionPressureReadsNeverReturnWrongBytes() throws Exception {
    run(CAPACITY);
    assertThat(tier.stats().evictions()).as("the key space is larger than the tier").isPositive();
  }

  @Test
  void withoutEvictionReadsNeverReturnWrongBytes() throws Exception {
    // all 344 keys at their largest (172 MiB), plus blocks pinned by leases and writers, fit well
    // within 256 MiB: nothing is evicted and no allocation fails, so nothing is compacted
    run(256L << 20);
    assertThat(tier.stats().evictions()).isZero();
    assertThat(tier.stats().compactions()).isZero();
  }

  @Test
  void closeWhilePutsRunLeavesNoMemoryBehind() throws Exception {
    RamTier closing =
        LEAKS.track(
            new RamTier(RamTierConfig.ofCapacity(16L << 20).withMaxBlockBytes(MAX_BLOCK)));
    ExecutorService pool = Executors.newFixedThreadPool(2);
    CountDownLatch running = new CountDownLatch(2);
    List<Future<Integer>> writers = new ArrayList<>();
    for (int t = 0; t < 2; t++) {
      int thread = t;
      writers.add(
          pool.submit(
              () -> {
                ByteBuffer src = ByteBuffer.allocateDirect(MIN_BLOCK);
                int stored = 0;
                for (int i = 0; i < 1_000_000; i++) {
                  BlockKey key = Payloads.key(thread * 1_000_000L + i);
                  src.clear();
                  Payloads.fill(src, key, 1);
                  try {
                    closing.put(key, src.flip());
                  } catch (IllegalStateException closed) {
                    return stored;
                  }
                  if (++stored == 50) {
                    running.countDown();
                  }
                }
                throw new AssertionError("the tier was never closed");
              }));
    }
    try {
      assertThat(running.await(30, TimeUnit.SECONDS)).isTrue();
      closing.close();
      for (Future<Integer> writer : writers) {
        assertThat(writer.get(30, TimeUnit.SECONDS)).isGreaterThanOrEqualTo(50);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(closing.stats().leasesOpen()).isZero();
    assertThat(closing.stats().blocks()).as("blocks left in a closed tier").isZero();
    assertThat(closing.stats().bytesUsed()).as("bytes used after close").isZero();
  }

  private void run(long capacity) throws Exception {
    tier =
        LEAKS.track(new RamTier(RamTierConfig.ofCapacity(capacity).withMaxBlockBytes(MAX_BLOCK)));
    for (int s = 0; s < SHARED; s++) {
      sharedKeys[s] = Payloads.key(1_000_000 + s);
      sharedIssued[s] = new AtomicLong();
    }
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    CountDownLatch start = new CountDownLatch(1);
    List<Future<Result>> futures = new ArrayList<>();
    try {
      for (int t = 0; t < THREADS; t++) {
        futures.add(pool.submit(new Worker(t, start)));
      }
      start.countDown();
      int totalOps = 0;
      for (Future<Result> future : futures) {
        try {
          totalOps += future.get(60, TimeUnit.SECONDS).ops();
        } catch (ExecutionException e) {
          Throwable cause = e.getCause();
          throw new AssertionError(cause + "\n(tier " + tier.stats() + ")", cause);
        }
      }
      CacheStats stats = tier.stats();
      System.out.printf(
          "concurrency, %d MiB tier: %d ops, %d verified hits, %d held leases re-verified,"
              + " %d puts rejected (no space), stats %s%n",
          capacity >> 20,
          totalOps,
          hitsVerified.get(),
          heldLeasesVerified.get(),
          rejectedNoSpace.get(),
          stats);
      assertThat(stats.leasesOpen()).as("leases open at the end").isZero();
      assertThat(stats.bytesUsed()).isLessThanOrEqualTo(capacity);
      assertThat(hitsVerified.get()).as("reads that hit and were verified").isGreaterThan(100);
      assertThat(heldLeasesVerified.get()).isPositive();
    } finally {
      pool.shutdownNow();
      assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
      tier.close();
    }
    assertThat(tier.stats().bytesUsed()).as("bytes used after close").isZero();
  }

  private final class Worker implements Callable<Result> {
    private final int id;
    private final CountDownLatch start;
    private final SplittableRandom random;
    private final BlockKey[] own = new BlockKey[OWNED_PER_THREAD];
    /** The version a read of an owned key may return; 0 if it must miss. */
    private final long[] expected = new long[OWNED_PER_THREAD];
    /** The last version issued for an owned key, so versions only grow. */
    private final long[] issued = new long[OWNED_PER_THREAD];
    private final ByteBuffer src = ByteBuffer.allocateDirect(MAX_BLOCK);
    private final ByteBuffer dst = ByteBuffer.allocateDirect(MAX_BLOCK);

    private BlockLease held;
    private ByteBuffer heldView;
    private long heldVersion;
    private int heldFor;

    Worker(int id, CountDownLatch start) {
      this.id = id;
      this.start = start;
      this.random = new SplittableRandom(0xC0FFEE + id);
      for (int i = 0; i < OWNED_PER_THREAD; i++) {
        own[i] = Payloads.key(id * 1000L + i);
      }
    }

    @Override
    public Result call() throws Exception {
      start.await();
      long deadline = System.nanoTime() + DURATION_NANOS;
      int ops = 0;
      try {
        while (ops < MAX_OPS_PER_THREAD && System.nanoTime() < deadline) {
          step();
          ops++;
          if (held != null && --heldFor <= 0) {
            releaseHeld();
          }
        }
      } finally {
        if (held != null) {
          releaseHeld();
        }
      }
      return new Result(ops);
    }

    private void step() {
      boolean shared = random.nextInt(8) == 0;
      int k = shared ? random.nextInt(SHARED) : random.nextInt(OWNED_PER_THREAD);
      BlockKey key = shared ? sharedKeys[k] : own[k];
      int dice = random.nextInt(100);
      if (dice < 35) {
        put(shared, k, key);
      } else if (dice < 60) {
        lease(shared, k, key);
      } else if (dice < 80) {
        copy(shared, k, key);
      } else if (dice < 90) {
        tier.delete(key);
        if (!shared) {
          expected[k] = 0;
        }
      } else {
        boolean present = tier.contains(key);
        if (!shared && expected[k] == 0) {
          assertThat(present).as("thread %d: deleted key %s is still present", id, key).isFalse();
        }
      }
    }

    private void put(boolean shared, int k, BlockKey key) {
      long version = shared ? sharedIssued[k].incrementAndGet() : ++issued[k];
      int length = MIN_BLOCK + random.nextInt(MAX_BLOCK - MIN_BLOCK + 1);
      src.clear().limit(length);
      Payloads.fill(src, key, version);
      PutStatus status = tier.put(key, src.flip());
      switch (status) {
        case STORED, NOT_ADMITTED -> {
          if (!shared) {
            expected[k] = version;
          }
        }
        case REJECTED_NO_SPACE -> rejectedNoSpace.incrementAndGet(); // the old block may remain
        default -> fail("thread %d: put of %d bytes returned %s", id, length, status);
      }
    }

    private void lease(boolean shared, int k, BlockKey key) {
      BlockLease lease = tier.get(key);
      if (lease.status() == GetStatus.MISS) {
        lease.close();
        return;
      }
      assertThat(lease.key()).isEqualTo(key);
      ByteBuffer view = lease.bytes();
      long version = checkRead(shared, k, key, view);
      if (held == null && random.nextInt(4) == 0) {
        held = lease; // keep it across the next operations, then verify again
        heldView = view;
        heldVersion = version;
        heldFor = 1 + random.nextInt(20);
      } else {
        lease.close();
      }
    }

    private void copy(boolean shared, int k, BlockKey key) {
      dst.clear();
      GetStatus status = tier.getInto(key, dst);
      if (status == GetStatus.HIT) {
        checkRead(shared, k, key, dst.flip());
      } else {
        assertThat(status).isEqualTo(GetStatus.MISS);
      }
    }

    private long checkRead(boolean shared, int k, BlockKey key, ByteBuffer bytes) {
      long version = Payloads.verify(key, bytes);
      if (shared) {
        assertThat(version)
            .as("thread %d: shared key %s read a version never put", id, key)
            .isBetween(1L, sharedIssued[k].get());
      } else {
        assertThat(version)
            .as("thread %d: own key %s must read as a miss or its latest version", id, key)
            .isEqualTo(expected[k]);
      }
      hitsVerified.incrementAndGet();
      return version;
    }

    private void releaseHeld() {
      BlockLease lease = held;
      held = null;
      try {
        assertThat(Payloads.verify(lease.key(), heldView))
            .as("thread %d: leased block changed while held", id)
            .isEqualTo(heldVersion);
        assertThat(Payloads.verify(lease.key(), lease.bytes())).isEqualTo(heldVersion);
        heldLeasesVerified.incrementAndGet();
      } finally {
        lease.close();
      }
    }
  }
}
