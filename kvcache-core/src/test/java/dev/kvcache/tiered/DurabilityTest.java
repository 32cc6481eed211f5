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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** What each {@link Durability} promises about the lower tier when a put answers. */
class DurabilityTest {

  private static final int BLOCK = 64 << 10;
  private static final RamTierConfig RAM = RamTierConfig.ofCapacity(4L << 20).withMaxBlockBytes(1 << 20);
  private static final int QUEUE_BLOCKS = 4;

  private RamTier below;
  private GatedTier lower;
  private TieredCache cache;

  private TieredCache open(Durability durability) {
    return open(durability, TieredCacheConfig.DEFAULT_SPILL_THREADS);
  }

  private TieredCache open(Durability durability, int spillThreads) {
    below = new RamTier(RamTierConfig.ofCapacity(64L << 20).withMaxBlockBytes(1 << 20));
    lower = new GatedTier(below);
    lower.keepInnerOpen = true;
    cache = new TieredCache(RAM, lower, new TieredCacheConfig(QUEUE_BLOCKS, Duration.ofSeconds(30),
        true, true, durability, spillThreads));
    return cache;
  }

  @AfterEach
  void closeCache() {
    if (cache != null) {
      lower.release();
      cache.close();
      assertThat(cache.ramStats().leasesOpen()).as("RAM leases left open").isZero();
      below.close();
    }
  }

  private static ByteBuffer block(int i, long version) {
    return Payloads.of(Payloads.key(i), version, BLOCK);
  }

  /** The version the lower tier holds for block i, or -1. */
  private long inLower(int i) {
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    if (lower.getInto(Payloads.key(i), dst) != GetStatus.HIT) {
      return -1;
    }
    return Payloads.verify(Payloads.key(i), dst.flip());
  }

  private long read(int i) {
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    if (cache.getInto(Payloads.key(i), dst) != GetStatus.HIT) {
      return -1;
    }
    return Payloads.verify(Payloads.key(i), dst.flip());
  }

  @Test
  void writeThroughAnswersOnceTheLowerTierHasTheBlock() {
    open(Durability.WRITE_THROUGH);
    for (int i = 0; i < 20; i++) {
      assertThat(cache.put(Payloads.key(i), block(i, 1))).isEqualTo(PutStatus.STORED);
      assertThat(inLower(i)).as("block %d in the lower tier when its put answers", i).isEqualTo(1);
    }
    BlockWriter writer = cache.writer(Payloads.key(0), BLOCK);
    writer.write(block(0, 2));
    assertThat(writer.commit()).isEqualTo(PutStatus.STORED);
    assertThat(inLower(0)).as("a block put in parts").isEqualTo(2);
    assertThat(cache.tryWriter(Payloads.key(1), BLOCK))
        .as("no writer whose commit would not wait for the lower tier").isEmpty();
    assertThat(cache.tieredStats().copies()).isEqualTo(21);
  }

  @Test
  void writeThroughRefusedBelowLeavesNothingAndSaysWhy() {
    open(Durability.WRITE_THROUGH);
    assertThat(cache.put(Payloads.key(0), block(0, 1))).isEqualTo(PutStatus.STORED);
    lower.full = true;
    assertThat(cache.put(Payloads.key(1), block(1, 1))).isEqualTo(PutStatus.REJECTED_NO_SPACE);
    assertThat(read(1)).as("a block the lower tier refused is not served from RAM").isEqualTo(-1);
    assertThat(cache.put(Payloads.key(0), block(0, 2))).isEqualTo(PutStatus.REJECTED_NO_SPACE);
    assertThat(read(0)).as("a refused overwrite leaves no stale copy either").isEqualTo(-1);
    assertThat(cache.tieredStats().writeFailures()).isEqualTo(2);
    assertThat(cache.health().degraded()).isTrue();
    assertThat(cache.health().problems()).singleElement().asString()
        .contains("writes to the gated tier fail");

    lower.full = false;
    assertThat(cache.put(Payloads.key(1), block(1, 2))).isEqualTo(PutStatus.STORED);
    assertThat(read(1)).isEqualTo(2);
    assertThat(cache.health().degraded()).as("healthy once a write succeeds").isFalse();
  }

  @Test
  void writeBehindLeavesAtMostTheQueueUnwritten() throws Exception {
    open(Durability.WRITE_BEHIND);
    lower.hold();
    AtomicInteger acknowledged = new AtomicInteger();
    CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
      for (int i = 0; i < 3 * QUEUE_BLOCKS; i++) {
        assertThat(cache.put(Payloads.key(i), block(i, 1))).isEqualTo(PutStatus.STORED);
        acknowledged.incrementAndGet();
      }
    });
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (acknowledged.get() < QUEUE_BLOCKS && System.nanoTime() < deadline) {
      Thread.sleep(1);
    }
    Thread.sleep(200); // time for puts past the bound to be wrongly acknowledged
    assertThat(acknowledged.get()).as("puts answered while the lower tier takes nothing")
        .isEqualTo(QUEUE_BLOCKS);
    assertThat(writer).isNotDone();
    for (int i = 0; i < QUEUE_BLOCKS; i++) {
      assertThat(read(i)).as("block %d readable while it waits", i).isEqualTo(1);
    }
    lower.release();
    writer.get(10, TimeUnit.SECONDS);
    assertThat(cache.awaitSpills(Duration.ofSeconds(10))).isTrue();
    for (int i = 0; i < 3 * QUEUE_BLOCKS; i++) {
      assertThat(inLower(i)).as("block %d written behind", i).isEqualTo(1);
    }
  }

  /**
   * A write-behind put whose commit would wait for the spill threads says so before it is made,
   * so that a server takes it, and commits it, off its event loop. Here what it would wait for is the byte bound (a quarter
   * of RAM, from the oldest block not yet written through its own), while the window holds few
   * blocks and the queue has room.
   */
  @Test
  void aCommitThatWouldWaitForTheBytesBehindItSaysSoBeforeItIsMade() throws Exception {
    below = new RamTier(RamTierConfig.ofCapacity(64L << 20).withMaxBlockBytes(1 << 20));
    lower = new GatedTier(below);
    lower.keepInnerOpen = true;
    cache = new TieredCache(RAM, lower, new TieredCacheConfig(64, Duration.ofSeconds(30), true,
        true, Durability.WRITE_BEHIND, 2));
    int size = 256 << 10; // four make the byte bound: a quarter of RAM's 4 MiB
    lower.hold(Payloads.key(0)); // its write waits; the other spill thread writes the rest
    for (int i = 0; i < 4; i++) {
      assertThat(cache.put(Payloads.key(i), Payloads.of(Payloads.key(i), 1, size)))
          .isEqualTo(PutStatus.STORED);
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    for (int i = 1; i < 4; i++) {
      while (below.getInto(Payloads.key(i), ByteBuffer.allocateDirect(size)) != GetStatus.HIT
          && System.nanoTime() < deadline) {
        Thread.sleep(1);
      }
    }
    assertThat(cache.tryWriter(Payloads.key(4), size))
        .as("declined, though RAM and the queue have room: a server takes it off its event loop")
        .isEmpty();
    BlockWriter writer = cache.writer(Payloads.key(4), size);
    writer.write(Payloads.of(Payloads.key(4), 1, size));
    assertThat(writer.commitMayWait()).as("a commit past the byte bound may wait").isTrue();
    CompletableFuture<PutStatus> commit = CompletableFuture.supplyAsync(writer::commit);
    Thread.sleep(200);
    assertThat(commit).as("the commit waits for the oldest block's write").isNotDone();
    lower.release();
    assertThat(commit.get(10, TimeUnit.SECONDS)).isEqualTo(PutStatus.STORED);
    writer.close();
  }

  /**
   * A put waiting for the queue waits only for the blocks before its own: once the oldest is
   * written it goes on, while a put that came after it still waits.
   */
  @Test
  void writeBehindPutsGoOnInTheOrderTheyCame() throws Exception {
    open(Durability.WRITE_BEHIND, 1); // one spill thread: the oldest block is the one written
    lower.hold();
    for (int i = 0; i < QUEUE_BLOCKS; i++) {
      assertThat(cache.put(Payloads.key(i), block(i, 1))).isEqualTo(PutStatus.STORED);
    }
    CompletableFuture<PutStatus> first =
        CompletableFuture.supplyAsync(() -> cache.put(Payloads.key(10), block(10, 1)));
    Thread.sleep(100);
    CompletableFuture<PutStatus> second =
        CompletableFuture.supplyAsync(() -> cache.put(Payloads.key(11), block(11, 1)));
    Thread.sleep(100);
    assertThat(first).as("past the bound while nothing is written").isNotDone();
    lower.allow(1);
    assertThat(first.get(10, TimeUnit.SECONDS)).isEqualTo(PutStatus.STORED);
    Thread.sleep(200); // time for the later put to be wrongly let go
    assertThat(second).as("one block written: the later put is still past the bound").isNotDone();
    lower.release();
    assertThat(second.get(10, TimeUnit.SECONDS)).isEqualTo(PutStatus.STORED);
  }

  @Test
  void writeBehindFailureIsCountedAndTheBlockStaysInRam() throws Exception {
    open(Durability.WRITE_BEHIND);
    lower.full = true;
    assertThat(cache.put(Payloads.key(0), block(0, 1))).isEqualTo(PutStatus.STORED);
    assertThat(cache.awaitSpills(Duration.ofSeconds(10))).isTrue();
    // 1, or more on a machine slow enough for a spill thread's retry (every second) to come first
    assertThat(cache.tieredStats().writeFailures()).isPositive();
    assertThat(cache.health().degraded()).isTrue();
    assertThat(read(0)).isEqualTo(1);
    lower.full = false;
    cache.close(); // RAM's blocks go down on close: the one that failed is not clean
    assertThat(inLower(0)).isEqualTo(1);
  }

  @Test
  void writeBehindRefusesPutsOnceTheWindowHoldsOnlyFailedBlocksUntilAWriteSucceeds()
      throws Exception {
    open(Durability.WRITE_BEHIND);
    lower.full = true; // every write below fails, as on a full or failing disk
    int taken = 0;
    PutStatus status;
    while ((status = cache.put(Payloads.key(taken), block(taken, 1))) == PutStatus.STORED) {
      taken++;
      assertThat(taken).as("puts taken while every write below fails").isLessThanOrEqualTo(
          QUEUE_BLOCKS);
      assertThat(cache.awaitSpills(Duration.ofSeconds(10))).isTrue();
    }
    assertThat(status).isEqualTo(PutStatus.REJECTED_NOT_DURABLE);
    assertThat(taken).as("the window's blocks are taken before any is refused")
        .isEqualTo(QUEUE_BLOCKS);
    assertThat(read(taken)).as("a refused put is not readable").isEqualTo(-1);
    for (int i = 0; i < taken; i++) {
      assertThat(read(i)).as("acknowledged block %d, still in RAM", i).isEqualTo(1);
    }
    TieredStats stats = cache.tieredStats();
    assertThat(stats.failedCopies()).isEqualTo(QUEUE_BLOCKS);
    assertThat(stats.notDurablePuts()).isEqualTo(1);
    assertThat(cache.health().problems()).anySatisfy(p -> assertThat(p)
        .contains(QUEUE_BLOCKS + " blocks written behind are in RAM only")
        .contains("puts are refused"));

    lower.full = false; // the disk recovers: an idle spill thread tries a failed copy again
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (cache.put(Payloads.key(taken), block(taken, 2)) != PutStatus.STORED) {
      assertThat(System.nanoTime()).as("puts are taken again").isLessThan(deadline);
      Thread.sleep(50);
    }
    assertThat(cache.awaitSpills(Duration.ofSeconds(10))).isTrue();
    assertThat(cache.health().degraded()).isFalse();
    assertThat(inLower(taken)).as("written behind again").isEqualTo(2);
  }

  @ParameterizedTest
  @EnumSource(Durability.class)
  void eachBlockIsWrittenBelowOnce(Durability durability) throws Exception {
    open(durability);
    int blocks = 3 * (int) (RAM.capacityBytes() / BLOCK); // RAM evicts most of them
    for (int i = 0; i < blocks; i++) {
      assertThat(cache.put(Payloads.key(i), block(i, 1))).isEqualTo(PutStatus.STORED);
    }
    assertThat(cache.awaitSpills(Duration.ofSeconds(10))).isTrue();
    cache.close();
    for (int i = 0; i < blocks; i++) {
      BlockKey key = Payloads.key(i);
      assertThat(inLower(i)).as("block %d below after close", i).isEqualTo(1);
      assertThat(lower.putsByKey.get(key)).as("writes of block %d", i).hasValue(1);
    }
  }
}
