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
import java.util.ArrayList;
import java.util.List;
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
 * they would wait, and a read answers without promoting; none of them waits for the write. The
 * same holds when the key's old copy starts on its way down, or more than half a window of
 * write-behind puts registers, between their checks and their work ({@link GatedTier} runs that in
 * between).
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

  private void open(long ramBytes, int window, Durability durability) {
    below = new RamTier(RamTierConfig.ofCapacity(64L << 20).withMaxBlockBytes(1 << 20));
    lower = new GatedTier(below);
    lower.keepInnerOpen = true;
    cache = new TieredCache(RamTierConfig.ofCapacity(ramBytes).withMaxBlockBytes(1 << 20), lower,
        new TieredCacheConfig(window, Duration.ofSeconds(30), true, true, durability, 2));
  }

  /**
   * Puts blocks of other stripes than {@code key}'s until RAM evicts {@code key}'s, then waits
   * until a spill thread is writing it (held by the lower tier).
   */
  private void evictAndAwaitItsSpill(BlockKey key) {
    for (int i = 100; !lower.putsByKey.containsKey(key) && i < 200; i++) {
      BlockKey other = Payloads.key(i);
      if (KeyStripes.of(other) != KeyStripes.of(key)) {
        assertThat(cache.put(other, Payloads.of(other, 1, BLOCK))).isEqualTo(PutStatus.STORED);
      }
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!lower.putsByKey.containsKey(key) && System.nanoTime() < deadline) {
      Thread.onSpinWait();
    }
    assertThat(lower.putsByKey).as("the old copy's spill under way").containsKey(key);
  }

  @Test
  void aWriterOpenedAsTheKeysOldCopyStartsOnItsWayDownDoesNotWaitForThatWrite() throws Exception {
    open(1 << 20, 64, Durability.RAM_FIRST); // RAM holds 16 blocks
    BlockKey key = Payloads.key(0);
    assertThat(cache.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
    lower.hold(key);
    lower.onNextContains(key, () -> evictAndAwaitItsSpill(key)); // after tryWriter's checks

    CompletableFuture<Optional<BlockWriter>> opened =
        CompletableFuture.supplyAsync(() -> cache.tryWriter(key, BLOCK), threads);
    assertThat(opened.get(2, TimeUnit.SECONDS)).as("no writer: its commit would wait").isEmpty();

    lower.release();
    assertThat(cache.put(key, Payloads.of(key, 2, BLOCK))).isEqualTo(PutStatus.STORED);
    ByteBuffer back = ByteBuffer.allocateDirect(BLOCK);
    assertThat(cache.getInto(key, back)).isEqualTo(GetStatus.HIT);
    assertThat(Payloads.verify(key, back.flip())).isEqualTo(2);
  }

  @Test
  void aCommitAsTheKeysOldCopyStartsOnItsWayDownDoesNotWaitForThatWrite() throws Exception {
    open(1 << 20, 64, Durability.RAM_FIRST);
    BlockKey key = Payloads.key(0);
    BlockWriter writer = cache.tryWriter(key, BLOCK).orElseThrow();
    writer.write(Payloads.of(key, 2, BLOCK));
    assertThat(cache.put(key, Payloads.of(key, 1, BLOCK))).as("a put meanwhile, the old copy")
        .isEqualTo(PutStatus.STORED);
    lower.hold(key);
    lower.onNextContains(key, () -> evictAndAwaitItsSpill(key)); // after tryCommit's checks

    CompletableFuture<Optional<PutStatus>> committed =
        CompletableFuture.supplyAsync(writer::tryCommit, threads);
    assertThat(committed.get(2, TimeUnit.SECONDS)).as("the commit would wait").isEmpty();

    lower.release();
    assertThat(writer.commit()).as("committed where it may wait").isEqualTo(PutStatus.STORED);
    writer.close();
    ByteBuffer back = ByteBuffer.allocateDirect(BLOCK);
    assertThat(cache.getInto(key, back)).isEqualTo(GetStatus.HIT);
    assertThat(Payloads.verify(key, back.flip())).as("the newer put").isEqualTo(2);
  }

  @Test
  void aWriteBehindCommitDoesNotWaitForPutsThatRegisterAfterItsCheck() throws Exception {
    int window = 16;
    open(64L << 20, window, Durability.WRITE_BEHIND);
    BlockKey key = Payloads.key(0);
    List<BlockKey> others = new ArrayList<>();
    for (int i = 1; others.size() < 3 * window; i++) {
      if (KeyStripes.of(Payloads.key(i)) != KeyStripes.of(key)) {
        others.add(Payloads.key(i));
      }
    }
    lower.hold(); // no copy is written: the backlog only grows
    int before = window / 2 - 1; // under half a window behind: the commit may go on at once
    for (BlockKey other : others.subList(0, before)) {
      assertThat(cache.put(other, Payloads.of(other, 1, BLOCK))).isEqualTo(PutStatus.STORED);
    }
    BlockWriter writer = cache.tryWriter(key, BLOCK).orElseThrow();
    writer.write(Payloads.of(key, 1, BLOCK));
    List<BlockKey> racing = others.subList(before, before + window); // more than half a window
    long inRam = cache.ramStats().blocks();
    lower.onNextDelete(key, () -> { // inside the commit, after its checks
      racing.forEach(other -> threads.execute(() -> cache.put(other, Payloads.of(other, 1, BLOCK))));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (cache.ramStats().blocks() < inRam + racing.size() && System.nanoTime() < deadline) {
        Thread.onSpinWait();
      }
    });

    CompletableFuture<Optional<PutStatus>> committed =
        CompletableFuture.supplyAsync(writer::tryCommit, threads);
    assertThat(committed.get(5, TimeUnit.SECONDS)).as("committed without waiting")
        .contains(PutStatus.STORED);
    assertThat(cache.ramStats().blocks()).as("the racing puts stored")
        .isEqualTo(inRam + racing.size() + 1);
    writer.close();

    lower.release();
    assertThat(cache.awaitSpills(Duration.ofSeconds(10))).isTrue();
    assertThat(below.contains(key)).as("its copy written behind").isTrue();
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
