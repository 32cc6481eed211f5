package dev.kvcache.disk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.testkit.Payloads;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Readers racing the reclaimer: writers overwrite and add blocks in a tier a few super-blocks
 * large, so super-blocks are dropped, compacted and their read blocks moved forward all the time,
 * while readers copy blocks out and hold leases across those moves. Every byte read must be
 * exactly one version of the block asked for.
 */
class ConcurrentReclaimTest {

  private static final int KEYS = 160;

  @TempDir Path temp;

  @Test
  void readersDuringCompactionAndEvictionReadCorrectBytes() throws Exception {
    DiskTierConfig config = DiskTierConfig.builder(temp.resolve("d"), 12L << 20)
        .superBlockBytes(1L << 20).minFreeBytes(0).syncPolicy(SyncPolicy.NONE)
        .reclaimBytesPerSecond(1L << 30).build();
    AtomicLong stored = new AtomicLong();
    AtomicLong dropped = new AtomicLong();
    AtomicLong hits = new AtomicLong();
    AtomicLong leaseHits = new AtomicLong();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try (DiskTier tier = DiskTier.open(config)) {
      List<Future<?>> tasks = new ArrayList<>();
      for (int w = 0; w < 2; w++) {
        int writer = w;
        tasks.add(pool.submit(() -> {
          SplittableRandom random = new SplittableRandom(writer);
          for (long version = 1; System.nanoTime() < deadline; version++) {
            // a few hot keys overwritten often (compaction), the rest cycling through (eviction)
            int i = random.nextInt(4) == 0 ? random.nextInt(8) : random.nextInt(KEYS);
            BlockKey key = Payloads.key(i);
            PutStatus status = tier.put(key, Payloads.of(key, version, 16_000 + 97 * i));
            // NOT_ADMITTED: its super-block was dropped for room while the block was written
            assertThat(status).isIn(PutStatus.STORED, PutStatus.NOT_ADMITTED);
            (status == PutStatus.STORED ? stored : dropped).incrementAndGet();
          }
          return null;
        }));
      }
      for (int r = 0; r < 2; r++) {
        int reader = r;
        tasks.add(pool.submit(() -> {
          SplittableRandom random = new SplittableRandom(100 + reader);
          ByteBuffer dst = ByteBuffer.allocateDirect(16_000 + 97 * KEYS);
          List<BlockLease> held = new ArrayList<>();
          while (System.nanoTime() < deadline) {
            BlockKey key = Payloads.key(random.nextInt(KEYS));
            if (tier.getInto(key, dst.clear()) == GetStatus.HIT) {
              Payloads.verify(key, dst.flip());
              hits.incrementAndGet();
            }
            BlockLease lease = tier.get(Payloads.key(random.nextInt(KEYS)));
            if (lease.status() == GetStatus.HIT) {
              held.add(lease); // kept across later puts, drops and moves, checked when closed
              leaseHits.incrementAndGet();
            } else {
              lease.close();
            }
            // a few at a time: a dropped super-block a lease pins still counts against the capacity
            if (held.size() > 2) {
              BlockLease oldest = held.remove(0);
              Payloads.verify(oldest.key(), oldest.bytes());
              oldest.close();
            }
          }
          for (BlockLease lease : held) {
            Payloads.verify(lease.key(), lease.bytes());
            lease.close();
          }
          return null;
        }));
      }
      for (Future<?> task : tasks) {
        task.get(30, TimeUnit.SECONDS); // rethrows a reader's AssertionError
      }
      assertThat(stored.get()).as("puts stored").isGreaterThan(10 * dropped.get());
      assertThat(hits.get()).isPositive();
      assertThat(leaseHits.get()).isPositive();
      assertThat(tier.diskStats().superBlocksDropped()).as("super-blocks dropped").isPositive();
      assertThat(tier.stats().bytesCompacted()).as("blocks moved forward").isPositive();
      assertThat(tier.diskStats().corruptBlocks()).isZero();
    } finally {
      pool.shutdownNow();
    }
  }
}
