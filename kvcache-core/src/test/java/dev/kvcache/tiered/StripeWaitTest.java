package dev.kvcache.tiered;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockWriter;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.testkit.Payloads;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What a thread that must not wait (a server's event loop) gets while another put holds the lock
 * of its key's stripe across the lower tier's write: a put of a key whose copy is on its way down
 * waits that write out under the lock. {@code tryWriter} and {@code tryCommit} answer at once that
 * they would wait, and a read answers without promoting; none of them waits for the write.
 */
class StripeWaitTest {

  private static final int BLOCK = 64 << 10;

  /** A thread for each call: the calls that wait must not hold up the ones that must not. */
  private final ExecutorService threads = Executors.newCachedThreadPool();
  private RamTier below;
  private GatedTier lower;
  private TieredCache cache;

  @AfterEach
  void closeCache() {
    lower.release();
    cache.close();
    below.close();
    threads.shutdown();
  }

  /** The first key after {@code from} in the stripe of {@code key}. */
  private static BlockKey sameStripe(BlockKey key, int from) {
    for (int i = from; ; i++) {
      if (KeyStripes.of(Payloads.key(i)) == KeyStripes.of(key)) {
        return Payloads.key(i);
      }
    }
  }

  @Test
  void threadsThatMustNotWaitAreToldSoWhileAPutHoldsTheirStripeAcrossAWrite() throws Exception {
    below = new RamTier(RamTierConfig.ofCapacity(64L << 20).withMaxBlockBytes(1 << 20));
    lower = new GatedTier(below);
    lower.keepInnerOpen = true;
    cache = new TieredCache(RamTierConfig.ofCapacity(16L << 20).withMaxBlockBytes(1 << 20), lower,
        new TieredCacheConfig(64, Duration.ofSeconds(30), true, true, Durability.WRITE_BEHIND, 2));
    BlockKey held = Payloads.key(0);
    BlockKey other = sameStripe(held, 1);
    BlockKey inLowerOnly = sameStripe(held, 1000);
    assertThat(below.put(inLowerOnly, Payloads.of(inLowerOnly, 1, BLOCK)))
        .isEqualTo(PutStatus.STORED);
    BlockWriter early = cache.tryWriter(other, BLOCK).orElseThrow();
    early.write(Payloads.of(other, 1, BLOCK));

    lower.hold(held); // the copy of `held` written behind waits
    assertThat(cache.put(held, Payloads.of(held, 1, BLOCK))).isEqualTo(PutStatus.STORED);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!lower.putsByKey.containsKey(held) && System.nanoTime() < deadline) {
      Thread.sleep(1);
    }
    // a new put of `held` waits out that write, under the stripe's lock
    CompletableFuture<PutStatus> again =
        CompletableFuture.supplyAsync(() -> cache.put(held, Payloads.of(held, 2, BLOCK)), threads);
    Thread.sleep(200);
    assertThat(again).as("the put waits for the write under way").isNotDone();

    CompletableFuture<Optional<BlockWriter>> opened =
        CompletableFuture.supplyAsync(() -> cache.tryWriter(sameStripe(held, 2000), BLOCK), threads);
    assertThat(opened.get(2, TimeUnit.SECONDS)).as("a writer of another key of the stripe")
        .isEmpty();
    CompletableFuture<Optional<PutStatus>> committed =
        CompletableFuture.supplyAsync(early::tryCommit, threads);
    assertThat(committed.get(2, TimeUnit.SECONDS)).as("a commit of another key of the stripe")
        .isEmpty();
    long inRam = cache.ramStats().blocks();
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    CompletableFuture<GetStatus> read =
        CompletableFuture.supplyAsync(() -> cache.getInto(inLowerOnly, dst), threads);
    assertThat(read.get(2, TimeUnit.SECONDS)).as("a read of the lower tier's block")
        .isEqualTo(GetStatus.HIT);
    assertThat(Payloads.verify(inLowerOnly, dst.flip())).isEqualTo(1);
    assertThat(cache.ramStats().blocks()).as("not promoted: that waits for the lock")
        .isEqualTo(inRam);

    lower.release();
    assertThat(again.get(10, TimeUnit.SECONDS)).isEqualTo(PutStatus.STORED);
    assertThat(early.tryCommit()).as("once the lock is free").contains(PutStatus.STORED);
    early.close();
    ByteBuffer back = ByteBuffer.allocateDirect(BLOCK);
    assertThat(cache.getInto(other, back)).isEqualTo(GetStatus.HIT);
    assertThat(Payloads.verify(other, back.flip())).isEqualTo(1);
  }
}
