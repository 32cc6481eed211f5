package dev.kvcache.disk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.testkit.Payloads;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Checkpoints swap the journal while puts and deletes wait for their entries to be durable ({@code
 * sync-policy: always}), and while roll-overs drop super-blocks: every put is stored and answered
 * (none waits on the new journal for an offset of the old one, none fails on a journal closed
 * under it), and everything stored reads back after a reopen.
 */
class JournalSwapTest {

  private static final int THREADS = 4;
  private static final int PUTS = 600;
  private static final int BLOCK = 4096;

  @TempDir Path temp;

  @Test
  void putsAcrossCheckpointsAreAllStoredAndDurable() throws Exception {
    DiskTierConfig config = DiskTierConfig.builder(temp.resolve("d"), 64L << 20)
        .superBlockBytes(1L << 20).minFreeBytes(0).syncPolicy(SyncPolicy.ALWAYS)
        .checkpointJournalBytes(64 << 10) // a checkpoint every thousand entries or so
        .build();
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try (DiskTier tier = DiskTier.open(config)) {
      List<Future<?>> tasks = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        int thread = t;
        tasks.add(pool.submit(() -> {
          for (int i = 0; i < PUTS; i++) {
            BlockKey key = Payloads.key(thread * PUTS + i);
            assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).as("put %d", i)
                .isEqualTo(PutStatus.STORED);
            if (i % 3 == 0) {
              tier.delete(key);
            }
          }
          return null;
        }));
      }
      for (Future<?> task : tasks) {
        task.get(60, TimeUnit.SECONDS); // a put waiting on the wrong journal never returns
      }
    } finally {
      pool.shutdownNow();
    }
    try (DiskTier tier = DiskTier.open(config)) {
      ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
      for (int i = 0; i < THREADS * PUTS; i++) {
        BlockKey key = Payloads.key(i);
        GetStatus status = tier.getInto(key, dst.clear());
        if (i % PUTS % 3 == 0) {
          assertThat(status).as("deleted block %d", i).isEqualTo(GetStatus.MISS);
        } else {
          assertThat(status).as("stored block %d (the tier has room for all)", i)
              .isEqualTo(GetStatus.HIT);
          assertThat(Payloads.verify(key, dst.flip())).isEqualTo(1);
        }
      }
    }
  }
}
