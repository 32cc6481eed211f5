package dev.kvcache.tiered;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.PutStatus;
import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.testkit.Payloads;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * RAM hands a block it evicts to the spill queue while it holds its index, and a copy written
 * behind or through a put asks RAM's index, once written, whether RAM still holds the block. So
 * taking an evicted block must never wait for a write: a copy of the same block, listed by its put
 * just after the evicting thread looked for one, once made the two wait for each other (puts of a
 * write-through cache hung under load).
 */
class EvictionDuringCopyTest {

  private static final int LENGTH = 4096;

  @Test
  void anEvictionDoesNotWaitForTheWriteOfTheSameBlocksCopy() throws Exception {
    RamTier ram = new RamTier(RamTierConfig.ofCapacity(1 << 20).withMaxBlockBytes(LENGTH));
    GatedTier lower = new GatedTier(
        new RamTier(RamTierConfig.ofCapacity(1 << 20).withMaxBlockBytes(LENGTH)));
    BlockKey key = Payloads.key(1);
    assertThat(ram.put(key, Payloads.of(key, 1, LENGTH))).isEqualTo(PutStatus.STORED);
    Object index = new Object(); // stands for RAM's index, which an evicting thread holds
    SpillQueue spills = new SpillQueue(lower, 8, 1 << 20, 1,
        k -> {
          synchronized (index) {
            // what copyStored asks RAM
          }
        },
        k -> { });
    ExecutorService threads = Executors.newFixedThreadPool(2); // the writer's and the evicting thread's
    try {
      lower.hold(key);
      SpillEntry copy = SpillEntry.copyOf(ram.get(key));
      spills.list(copy);
      CompletableFuture<PutStatus> written =
          CompletableFuture.supplyAsync(() -> spills.writeNow(copy, true), threads);
      while (lower.putsStarted.get() == 0) {
        Thread.sleep(1);
      }
      CompletableFuture<Boolean> taken = CompletableFuture.supplyAsync(() -> {
        synchronized (index) {
          lower.release(); // the copy's write ends, and then waits for the index
          return spills.evicted(ram.get(key), false);
        }
      }, threads);

      assertThat(taken.get(30, TimeUnit.SECONDS)).as("evicted block queued").isFalse();
      assertThat(written.get(30, TimeUnit.SECONDS)).isEqualTo(PutStatus.STORED);
      assertThat(spills.unlist(copy)).isTrue();
      assertThat(spills.size()).isZero();
      assertThat(spills.bytes()).as("bytes waiting").isZero();
      assertThat(lower.putsByKey.get(key).get()).as("writes of the block").isEqualTo(1);
      assertThat(ram.stats().leasesOpen()).as("RAM leases left open").isZero();
    } finally {
      lower.release();
      threads.shutdownNow();
      spills.close();
      ram.close();
    }
  }
}
