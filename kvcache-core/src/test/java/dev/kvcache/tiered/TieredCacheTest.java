package dev.kvcache.tiered;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.BlockWriter;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.testkit.Payloads;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class TieredCacheTest {

  private static final int BLOCK = 64 << 10;
  private static final RamTierConfig RAM = RamTierConfig.ofCapacity(4L << 20).withMaxBlockBytes(1 << 20);

  private GatedTier lower;
  private TieredCache cache;

  /** A cache whose puts wait for the spill queue as long as a test may take: nothing is dropped. */
  private TieredCache open(int spillQueueBlocks, long lowerBytes) {
    return open(spillQueueBlocks, lowerBytes, Duration.ofSeconds(30), true);
  }

  private TieredCache open(int spillQueueBlocks, long lowerBytes, Duration spillQueueWait) {
    return open(spillQueueBlocks, lowerBytes, spillQueueWait, true);
  }

  private TieredCache open(int spillQueueBlocks, long lowerBytes, Duration spillQueueWait, boolean promote) {
    return open(spillQueueBlocks, lowerBytes, spillQueueWait, promote,
        TieredCacheConfig.DEFAULT_SPILL_THREADS);
  }

  private TieredCache open(int spillQueueBlocks, long lowerBytes, Duration spillQueueWait,
      boolean promote, int spillThreads) {
    lower = new GatedTier(new RamTier(RamTierConfig.ofCapacity(lowerBytes).withMaxBlockBytes(1 << 20)));
    cache = new TieredCache(RAM, lower, new TieredCacheConfig(spillQueueBlocks, spillQueueWait,
        promote, true, Durability.RAM_FIRST, spillThreads));
    return cache;
  }

  @AfterEach
  void closeCache() {
    if (cache != null) {
      lower.release(); // a test that failed while holding spills back
      cache.close();
      assertThat(cache.ramStats().leasesOpen()).as("RAM leases left open").isZero();
    }
  }

  private static void putAll(KvCache c, int from, int to, long version) {
    for (int i = from; i < to; i++) {
      BlockKey key = Payloads.key(i);
      assertThat(c.put(key, Payloads.of(key, version, BLOCK))).isEqualTo(PutStatus.STORED);
    }
  }

  /** Puts while spills are held back: a block RAM evicts at once may be dropped with the queue full. */
  private static void putAllMayDrop(KvCache c, int from, int to, long version) {
    for (int i = from; i < to; i++) {
      BlockKey key = Payloads.key(i);
      assertThat(c.put(key, Payloads.of(key, version, BLOCK))).isIn(PutStatus.STORED, PutStatus.NOT_ADMITTED);
    }
  }

  /** The version read back, or -1 for a miss. */
  private static long read(KvCache c, int i) {
    BlockKey key = Payloads.key(i);
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    GetStatus status = c.getInto(key, dst);
    if (status == GetStatus.MISS) {
      return -1;
    }
    assertThat(status).isEqualTo(GetStatus.HIT);
    return Payloads.verify(key, dst.flip());
  }

  private static void await(BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime()).as("waited 10 s").isLessThan(deadline);
      Thread.sleep(2);
    }
  }

  private void awaitSpills() throws InterruptedException {
    assertThat(cache.awaitSpills(Duration.ofSeconds(10))).isTrue();
  }

  @Test
  void blocksEvictedFromRamAreReadBackFromTheLowerTier() throws Exception {
    open(256, 32L << 20, Duration.ofSeconds(30), false); // reads leave each block where it is
    putAll(cache, 0, 200, 1); // 12.5 MiB through 4 MiB of RAM
    awaitSpills();
    TieredStats spilled = cache.tieredStats();
    assertThat(spilled.spills()).isGreaterThan(100);
    assertThat(spilled.spillDrops()).isZero();
    for (int i = 0; i < 200; i++) {
      assertThat(read(cache, i)).as("block %d", i).isEqualTo(1);
    }
    TieredStats read = cache.tieredStats();
    assertThat(read.lowerHits()).isEqualTo(spilled.spills());
    assertThat(read.ramHits() + read.lowerHits()).isEqualTo(200);
    assertThat(read.promotions()).isZero();
    assertThat(cache.stats().hits()).isEqualTo(200);
  }

  @Test
  void aBatchReadTellsWhichTierServedEachBlock() throws Exception {
    open(256, 32L << 20, Duration.ofSeconds(30), false);
    putAll(cache, 0, 100, 4);
    awaitSpills();
    List<BlockKey> keys = new ArrayList<>();
    List<ByteBuffer> dsts = new ArrayList<>();
    for (int i = 0; i <= 100; i++) {
      keys.add(Payloads.key(i == 100 ? 500 : i)); // the last one was never put
      dsts.add(ByteBuffer.allocateDirect(BLOCK));
    }
    long inRam = cache.ramStats().blocks();
    TieredRead[] reads = cache.readAllInto(keys, dsts);
    Map<TieredRead.Source, Integer> bySource = new EnumMap<>(TieredRead.Source.class);
    for (int i = 0; i < 100; i++) {
      assertThat(reads[i].status()).as("block %d, %s", i, cache.tieredStats()).isEqualTo(GetStatus.HIT);
      assertThat(Payloads.verify(keys.get(i), dsts.get(i).flip())).isEqualTo(4);
      bySource.merge(reads[i].source(), 1, Integer::sum);
    }
    assertThat(reads[100]).isEqualTo(new TieredRead(GetStatus.MISS, TieredRead.Source.NONE));
    assertThat(lower.batchReads).as("what RAM lacked, asked of the lower tier at once").hasValue(1);
    assertThat(bySource.get(TieredRead.Source.RAM)).isEqualTo((int) inRam);
    assertThat(bySource.get(TieredRead.Source.LOWER)).isEqualTo(100 - (int) inRam);
    TieredStats t = cache.tieredStats();
    assertThat(t.ramHits()).isEqualTo(inRam);
    assertThat(t.lowerHits()).isEqualTo(100 - inRam);
    assertThat(cache.stats().prefillTokensAvoided(512)).isEqualTo(100 * 512);
  }

  @Test
  void aLeaseOnALowerTierBlockIsAViewOfItsBytes() throws Exception {
    open(256, 32L << 20);
    putAll(cache, 0, 100, 3);
    awaitSpills();
    BlockKey first = Payloads.key(0);
    assertThat(cache.ramStats().blocks()).isLessThan(100);
    try (BlockLease lease = cache.get(first)) {
      assertThat(lease.status()).isEqualTo(GetStatus.HIT);
      assertThat(Payloads.verify(first, lease.bytes())).isEqualTo(3);
      assertThat(cache.stats().leasesOpen()).isEqualTo(1);
    }
    assertThat(cache.stats().leasesOpen()).isZero();
    assertThat(cache.tieredStats().lowerHits()).isEqualTo(1);
  }

  /**
   * Ten keys: 0, 1 and 5 put through the cache (in RAM), 2, 3, 4, 6, 7 and 9 only in the lower
   * tier, 8 nowhere.
   */
  private List<BlockKey> keysInRamAndBelow(long version) {
    List<BlockKey> keys = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      BlockKey key = Payloads.key(i);
      keys.add(key);
      if (i == 0 || i == 1 || i == 5) {
        assertThat(cache.put(key, Payloads.of(key, version, BLOCK))).isEqualTo(PutStatus.STORED);
      } else if (i != 8) {
        assertThat(lower.put(key, Payloads.of(key, version, BLOCK))).isEqualTo(PutStatus.STORED);
      }
    }
    return keys;
  }

  @Test
  void aLookupAsksTheLowerTierOnceForEachRunOfKeysRamLacks() {
    open(256, 32L << 20);
    List<BlockKey> keys = keysInRamAndBelow(1);
    assertThat(cache.lookupPrefix(keys)).isEqualTo(8);
    // runs 2-4 and 6-9, whose answers say 5 and 8 are not below; no probe of single keys
    assertThat(lower.lookups).hasValue(2);
    assertThat(lower.probes).hasValue(0);
    assertThat(cache.lookupPrefix(keys.subList(0, 2))).as("all in RAM").isEqualTo(2);
    assertThat(lower.lookups).hasValue(2);
  }

  @Test
  void aPinHoldsBlocksOfEveryTierAndAsksTheLowerTierOncePerRun() {
    open(256, 32L << 20, Duration.ofSeconds(30), false);
    List<BlockKey> keys = keysInRamAndBelow(6);
    try (PrefixPin pin = cache.pinPrefix(keys, Duration.ofSeconds(30))) {
      assertThat(pin.blocks()).isEqualTo(8);
      assertThat(lower.pins).hasValue(2);
      assertThat(lower.probes).hasValue(0);
      assertThat(lower.stats().leasesOpen()).as("the lower tier's pin").isEqualTo(5);
      for (int i = 0; i < 8; i++) {
        BlockKey key = keys.get(i);
        assertThat(pin.key(i)).isEqualTo(key);
        assertThat(pin.length(i)).isEqualTo(BLOCK);
        ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
        assertThat(pin.getInto(i, dst)).as("block %d", i).isEqualTo(GetStatus.HIT);
        assertThat(Payloads.verify(key, dst.flip())).isEqualTo(6);
        long[] version = new long[1];
        assertThat(pin.read(i, view -> version[0] = Payloads.verify(key, view))).isTrue();
        assertThat(version[0]).isEqualTo(6);
      }
    }
    assertThat(lower.stats().leasesOpen()).as("released with the pin").isZero();
    assertThat(cache.ramStats().leasesOpen()).isZero();
    TieredStats t = cache.tieredStats();
    assertThat(t.ramHits()).isEqualTo(3);
    assertThat(t.lowerHits()).isEqualTo(5);
    assertThat(t.promotions()).as("promotion is off").isZero();
    assertThat(cache.stats().misses()).as("key 8").isEqualTo(1);
  }

  @Test
  void aBlockReadThroughAPinIsPromotedUnlessChangedSinceThePin() {
    open(256, 32L << 20); // promotes lower-tier hits
    BlockKey kept = Payloads.key(0);
    BlockKey deleted = Payloads.key(1);
    assertThat(lower.put(kept, Payloads.of(kept, 2, BLOCK))).isEqualTo(PutStatus.STORED);
    assertThat(lower.put(deleted, Payloads.of(deleted, 2, BLOCK))).isEqualTo(PutStatus.STORED);
    try (PrefixPin pin = cache.pinPrefix(List.of(kept, deleted), Duration.ofSeconds(30))) {
      assertThat(pin.blocks()).isEqualTo(2);
      assertThat(cache.delete(deleted)).isTrue();
      for (int i = 0; i < 2; i++) {
        ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
        assertThat(pin.getInto(i, dst)).isEqualTo(GetStatus.HIT);
        assertThat(Payloads.verify(pin.key(i), dst.flip())).as("as pinned").isEqualTo(2);
      }
    }
    assertThat(cache.tieredStats().promotions()).isEqualTo(1);
    assertThat(cache.readAllInto(List.of(kept), List.of(ByteBuffer.allocateDirect(BLOCK)))[0])
        .isEqualTo(new TieredRead(GetStatus.HIT, TieredRead.Source.RAM));
    assertThat(read(cache, 1)).as("deleted after the pin, not brought back by reading it")
        .isEqualTo(-1);
  }

  @Test
  void aPinWithABadTimeoutHoldsNothing() {
    open(256, 32L << 20);
    List<BlockKey> keys = keysInRamAndBelow(1);
    assertThatThrownBy(() -> cache.pinPrefix(keys, Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("timeout");
    assertThat(lower.pins).hasValue(0);
    assertThat(cache.stats().leasesOpen()).isZero();
  }

  @Test
  void aPromotedBlockIsNotWrittenAgainWhenRamEvictsItUnchanged() throws Exception {
    open(256, 256L << 20); // room for every block: the lower tier refuses no spill
    putAll(cache, 0, 100, 1);
    awaitSpills();
    // read from the lower tier until RAM takes the copy (at once under LRU; W-TinyLFU's frequency
    // filter may take a few reads)
    for (int reads = 0; reads < 5 && cache.tieredStats().promotions() == 0; reads++) {
      assertThat(read(cache, 0)).isEqualTo(1);
    }
    assertThat(cache.tieredStats().promotions()).isEqualTo(1);
    // new blocks, each put twice (so that a frequency filter would prefer them too), until RAM
    // evicts block 0
    for (int from = 1000; from < 3000 && cache.tieredStats().spillsSkipped() == 0; from += 50) {
      putAll(cache, from, from + 50, 1);
      putAll(cache, from, from + 50, 1);
      awaitSpills();
    }
    assertThat(cache.tieredStats().spillsSkipped()).isEqualTo(1);
    // every write to the lower tier is a counted spill; a stats read may run RAM's maintenance,
    // which can evict and spill once more, so the two counts are compared once they settle
    await(() -> lower.putsStarted.get() == cache.tieredStats().spills());
    assertThat(read(cache, 0)).isEqualTo(1);
  }

  @Test
  void aNewerPutIsNeverShadowedByAnOlderCopyInTheLowerTier() throws Exception {
    open(1, 32L << 20, Duration.ZERO);
    putAllMayDrop(cache, 0, 100, 1);
    awaitSpills();
    for (int reads = 0; reads < 5 && cache.tieredStats().promotions() == 0; reads++) {
      assertThat(read(cache, 0)).isEqualTo(1);
    }
    assertThat(cache.tieredStats().promotions()).as("RAM and the lower tier both hold version 1").isEqualTo(1);
    putAll(cache, 0, 1, 2);
    lower.hold(); // from now on spills wait, the queue fills and RAM's evictions are dropped
    putAllMayDrop(cache, 2000, 2100, 1);
    await(() -> cache.tieredStats().spillDrops() > 0);
    assertThat(read(cache, 0)).as("version 2, or a miss once dropped; never version 1")
        .isIn(2L, -1L);
    lower.release();
  }

  @Test
  void aWriterOpensWithoutWaitingOnlyWhileRamHasRoomForTheBlock() throws Exception {
    open(8, 32L << 20, Duration.ZERO);
    BlockKey first = Payloads.key(0);
    Optional<BlockWriter> now = cache.tryWriter(first, BLOCK);
    assertThat(now).as("an empty cache has room").isPresent();
    try (BlockWriter writer = now.get()) {
      writer.write(Payloads.of(first, 2, BLOCK));
      assertThat(writer.commit()).isEqualTo(PutStatus.STORED);
    }
    assertThat(cache.readAllInto(List.of(first), List.of(ByteBuffer.allocateDirect(BLOCK)))[0])
        .isEqualTo(new TieredRead(GetStatus.HIT, TieredRead.Source.RAM));
    assertThat(cache.tryWriter(Payloads.key(1), (1 << 20) + 1)).get()
        .satisfies(w -> assertThat(w.rejection()).contains(PutStatus.REJECTED_TOO_LARGE));

    lower.hold(); // spills wait: the queue fills up with what RAM evicts
    putAllMayDrop(cache, 100, 200, 1);
    assertThat(cache.tryWriter(Payloads.key(2), BLOCK)).as("the spill queue is over half full").isEmpty();
    lower.release();
    awaitSpills();
    assertThat(cache.tryWriter(Payloads.key(2), BLOCK)).isPresent().get()
        .satisfies(BlockWriter::close);
  }

  @Test
  void aReadThatMustNotWaitIsAnsweredFromRamOrTheSpillQueueAndLeavesTheLowerTierToGet()
      throws Exception {
    open(64, 32L << 20);
    assertThat(cache.readsMayWait()).isTrue();
    putAll(cache, 0, 100, 1); // 6.25 MiB through a RAM of 4: the first blocks go down
    awaitSpills();
    BlockKey inRam = Payloads.key(99);
    BlockKey below = Payloads.key(0);
    assertThat(lower.contains(below)).isTrue();
    int probes = lower.probes.get();
    try (BlockLease lease = cache.tryGet(inRam).orElseThrow()) {
      assertThat(lease.status()).isEqualTo(GetStatus.HIT);
      assertThat(Payloads.verify(inRam, lease.bytes())).isEqualTo(1);
    }
    assertThat(cache.tryGet(below)).as("held only below RAM").isEmpty();
    assertThat(cache.tryGet(Payloads.key(1000))).as("held nowhere: only a read below says so")
        .isEmpty();
    assertThat(lower.probes.get()).as("the lower tier was not asked").isEqualTo(probes);
    try (BlockLease lease = cache.get(below)) {
      assertThat(Payloads.verify(below, lease.bytes())).isEqualTo(1);
    }

    lower.hold(); // the blocks evicted now wait in the spill queue
    putAll(cache, 200, 204, 1); // a few: the queue keeps room, and the puts do not wait
    BlockKey waiting = foundIn(TieredRead.Source.SPILL_QUEUE, 0, 204);
    try (BlockLease lease = cache.tryGet(waiting).orElseThrow()) {
      assertThat(Payloads.verify(waiting, lease.bytes())).isEqualTo(1);
    }
    lower.release();
  }

  @Test
  void aBlockWaitingToBeSpilledIsStillReadable() throws Exception {
    open(64, 32L << 20, Duration.ZERO);
    lower.hold();
    putAllMayDrop(cache, 0, 100, 5);
    await(() -> lower.putsStarted.get() > 0);
    int hits = 0;
    for (int i = 0; i < 100; i++) {
      long version = read(cache, i);
      assertThat(version).as("block %d", i).isIn(5L, -1L);
      hits += version == 5 ? 1 : 0;
    }
    TieredStats t = cache.tieredStats();
    assertThat(t.spillHits()).isPositive();
    assertThat(hits).as("every block but those dropped with the queue full")
        .isEqualTo(100 - (int) t.spillDrops());
    lower.release();
  }

  /** The first of blocks {@code from} to {@code to} that a read finds in {@code source}. */
  private BlockKey foundIn(TieredRead.Source source, int from, int to) {
    for (int i = from; i < to; i++) {
      BlockKey k = Payloads.key(i);
      ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
      if (cache.readAllInto(List.of(k), List.of(dst))[0].source() == source) {
        return k;
      }
    }
    throw new AssertionError("no block of " + from + " to " + to + " in " + source);
  }

  @Test
  void everyLeasePathCountsItsLeaseClosed() throws Exception {
    open(64, 32L << 20, Duration.ZERO, false);
    putAll(cache, 0, 100, 1);
    awaitSpills(); // the first blocks are on the lower tier only now
    lower.hold();
    putAllMayDrop(cache, 100, 200, 2); // what RAM evicts from now on waits in the queue
    await(() -> lower.putsStarted.get() > 0);
    BlockKey inLower = foundIn(TieredRead.Source.LOWER, 0, 100);
    BlockKey queued = foundIn(TieredRead.Source.SPILL_QUEUE, 0, 200);
    BlockKey inRam = foundIn(TieredRead.Source.RAM, 0, 200);

    for (BlockKey key : List.of(inRam, queued, inLower)) {
      try (BlockLease lease = cache.get(key)) {
        assertThat(lease.status()).as(key.toString()).isEqualTo(GetStatus.HIT);
        assertThat(cache.stats().leasesOpen()).isEqualTo(1);
      }
      assertThat(cache.stats().leasesOpen()).as("closed: " + key).isZero();
    }
    try (PrefixPin pin = cache.pinPrefix(List.of(inRam, queued), Duration.ofSeconds(30))) {
      assertThat(pin.blocks()).isEqualTo(2);
      assertThat(cache.stats().leasesOpen()).isEqualTo(2);
    }
    assertThat(cache.stats().leasesOpen()).as("after the pin").isZero();
    lower.release();
  }

  @ParameterizedTest(name = "{0} spill threads")
  @ValueSource(ints = {1, 3})
  void spillThreadsWriteThatManyBlocksAtOnce(int spillThreads) throws Exception {
    open(256, 32L << 20, Duration.ofSeconds(30), false, spillThreads);
    lower.putDelayMillis = 20;
    putAll(cache, 0, 100, 1); // 6.25 MiB through 4 MiB of RAM, each spill taking 20 ms
    awaitSpills();
    assertThat(lower.maxPutsUnderWay.get()).as("writes under way at once").isEqualTo(spillThreads);
    assertThat(cache.tieredStats().spillDrops()).isZero();
    for (int i = 0; i < 100; i++) {
      assertThat(read(cache, i)).as("block %d", i).isEqualTo(1);
    }
  }

  @Test
  void aFullSpillQueueDropsBlocksAndCountsThem() throws Exception {
    open(2, 32L << 20, Duration.ZERO);
    lower.hold();
    putAllMayDrop(cache, 0, 100, 1);
    TieredStats t = cache.tieredStats();
    assertThat(t.spillDrops()).isPositive();
    assertThat(cache.stats().evictions()).isGreaterThanOrEqualTo(t.spillDrops());
    lower.release();
    awaitSpills();
    int found = 0;
    for (int i = 0; i < 100; i++) {
      found += read(cache, i) == 1 ? 1 : 0;
    }
    assertThat(found).isEqualTo(100 - (int) cache.tieredStats().spillDrops());
  }

  /**
   * Writers each own a set of keys and check every read against what they last did to a key: a
   * read returns the last version put, or a miss, never an older version; a reader on other
   * writers' keys checks that bytes always belong to their key. Both tiers evict throughout.
   */
  @ParameterizedTest(name = "{0} spill threads")
  @ValueSource(ints = {1, 4})
  void concurrentPutsReadsAndDeletesNeverServeStaleOrForeignBytes(int spillThreads)
      throws Exception {
    open(8, 1L << 20, Duration.ofSeconds(30), true, spillThreads);
    runWriters(2, 64, 4000);
    TieredStats t = cache.tieredStats();
    assertThat(t.spills()).as("RAM spilled").isPositive();
    assertThat(cache.lowerStats().evictions()).as("the lower tier evicted").isPositive();
  }

  /**
   * The same mix where the lower tier has room for everything: afterwards every key reads back
   * exactly as its writer last left it, so no acknowledged block was lost on its way down.
   */
  @ParameterizedTest(name = "{0} spill threads")
  @ValueSource(ints = {1, 4})
  void whileCapacityAllowsNoAcknowledgedBlockIsLost(int spillThreads) throws Exception {
    open(256, 32L << 20, Duration.ofSeconds(30), true, spillThreads);
    long[][] last = runWriters(2, 48, 3000);
    awaitSpills();
    TieredStats t = cache.tieredStats();
    assertThat(t.spills()).as("RAM spilled").isPositive();
    assertThat(t.promotions()).as("disk hits were promoted").isPositive();
    assertThat(t.spillDrops()).isZero();
    for (int w = 0; w < last.length; w++) {
      for (int k = 0; k < last[w].length; k++) {
        int i = w * last[w].length + k;
        assertThat(read(cache, i)).as("key %d", i).isEqualTo(last[w][k] == 0 ? -1 : last[w][k]);
      }
    }
  }

  /**
   * Runs {@code writers} threads, each on its own {@code keysEach} keys (puts, deletes, copying
   * reads and leases, each read checked against the writer's own record), beside a reader of
   * everyone's keys; fails on the first wrong read.
   *
   * @return each writer's last version per key, 0 for deleted or never stored
   */
  private long[][] runWriters(int writers, int keysEach, int opsEach) throws InterruptedException {
    long[][] last = new long[writers][keysEach];
    Throwable[] failure = {null};
    Thread[] threads = new Thread[writers + 1];
    for (int w = 0; w < writers; w++) {
      int base = w * keysEach;
      long[] mine = last[w];
      threads[w] = new Thread(() -> {
        long version = 0;
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int op = 0; op < opsEach; op++) {
          int k = random.nextInt(keysEach);
          BlockKey key = Payloads.key(base + k);
          int dice = random.nextInt(10);
          if (dice < 4) {
            version++;
            PutStatus status = cache.put(key, Payloads.of(key, version, BLOCK / 2 + k * 512));
            mine[k] = status == PutStatus.STORED ? version : 0;
          } else if (dice == 4) {
            cache.delete(key);
            mine[k] = 0;
          } else if (dice < 8) {
            long got = read(cache, base + k);
            if (got != -1 && got != mine[k]) {
              throw new AssertionError("key " + (base + k) + ": read version " + got + ", last put " + mine[k]);
            }
          } else {
            try (BlockLease lease = cache.get(key)) {
              if (lease.status() == GetStatus.HIT) {
                long got = Payloads.verify(key, lease.bytes());
                if (got != mine[k]) {
                  throw new AssertionError("key " + (base + k) + ": leased version " + got + ", last put " + mine[k]);
                }
              }
            }
          }
        }
      });
    }
    threads[writers] = new Thread(() -> {
      ThreadLocalRandom random = ThreadLocalRandom.current();
      for (int op = 0; op < 2 * opsEach; op++) {
        read(cache, random.nextInt(writers * keysEach)); // verify() checks the bytes' key
      }
    });
    for (Thread t : threads) {
      t.setUncaughtExceptionHandler((th, e) -> failure[0] = e);
      t.start();
    }
    for (Thread t : threads) {
      t.join();
    }
    assertThat(failure[0]).isNull();
    return last;
  }
}
