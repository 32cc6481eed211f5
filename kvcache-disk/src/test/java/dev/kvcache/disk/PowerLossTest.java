package dev.kvcache.disk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.PutStatus;
import dev.kvcache.disk.device.FaultyDevice;
import dev.kvcache.disk.device.StorageDevice;
import dev.kvcache.spi.BlockListener;
import dev.kvcache.testkit.Payloads;
import dev.kvcache.tiered.Durability;
import dev.kvcache.tiered.KvCacheBuilder;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Power cuts at random operations of a {@link FaultyDevice}, under concurrent puts and deletes
 * that overwrite a few dozen keys (so super-blocks are compacted and the journal checkpointed all
 * the time), then recovery and a read of every key. For the disk tier alone (its payloads written
 * through the page cache or past it) and for RAM over it in each durability mode, under each sync
 * policy:
 *
 * <ul>
 *   <li>recovery never fails, and no read returns a byte that was not put: every hit is exactly
 *       one version put under its key, and never a version older than what was promised;
 *   <li>what is promised (the floor below which nothing acknowledged may be lost): under {@code
 *       always}, every acknowledged put and delete written through (the disk alone, {@code
 *       write_through}), and all but the last spill queue's worth of {@code write_behind}; under
 *       {@code periodic}, the same for what was stored before a sync that started after it and
 *       ended before the cut; under {@code none}, and with {@code ram_first}, nothing.
 *   <li>a later delete of a key, answered or not, may have taken effect; over RAM a later put that
 *       was not answered when the power was cut, or was answered past the promise's floor, may
 *       also leave the key a miss, since it takes the disk's copy away before it writes its own
 *       ({@code docs/tiered-cache.md}, "On power loss"). A put answered before the cut without
 *       being stored excuses nothing.
 *   <li>keys written once, never overwritten nor deleted, have no excuse but eviction (the disk
 *       tier reclaims its oldest super-blocks, told to its listener): each acknowledged below the
 *       floor reads back, exactly, after every later cut.
 * </ul>
 *
 * {@code -Dkvcache.powerCuts=300} runs ten times the cuts.
 */
@Tag("power-loss")
class PowerLossTest {

  private static final int CUTS = Integer.getInteger("kvcache.powerCuts", 30);
  private static final int KEYS = 40;
  /** Keys written once, numbered from here, a few per writer and cut. */
  private static final int ONCE_FROM = 1000;
  private static final int ONCE_PER_CUT = 3;
  private static final int WRITERS = 2;
  private static final int SPILL_QUEUE = 8;
  private static final int SPILL_THREADS = 2;
  private static final Path DIR = Path.of("/device/tier");

  enum Stack { DISK, RAM_OVER_DISK }

  /** How the disk tier writes block payloads ({@link DiskTierConfig#directWrites()}). */
  enum Writes { PAGE_CACHE, DIRECT }

  static Stream<Arguments> cells() {
    List<Arguments> cells = new ArrayList<>();
    for (SyncPolicy policy : SyncPolicy.values()) {
      cells.add(Arguments.of(Stack.DISK, Durability.WRITE_THROUGH, policy, Writes.PAGE_CACHE));
      cells.add(Arguments.of(Stack.DISK, Durability.WRITE_THROUGH, policy, Writes.DIRECT));
      for (Durability mode : Durability.values()) {
        cells.add(Arguments.of(Stack.RAM_OVER_DISK, mode, policy, Writes.PAGE_CACHE));
      }
    }
    return cells.stream();
  }

  private static int length(int key) {
    return key >= ONCE_FROM ? 3000 + 411 * (key % 16) : 2048 + 613 * key;
  }

  /** An acknowledged put (a version) or delete, in the order of acknowledgements. */
  private record Ack(int key, long version, boolean delete, long sequence) {}

  /** The cache under test and the disk tier in it. */
  private record Opened(KvCache cache, DiskTier disk) implements AutoCloseable {
    @Override
    public void close() {
      try {
        cache.close();
      } catch (RuntimeException e) {
        // a cache whose device lost power: its close fails, as a dead process's would have
      }
    }
  }

  /** Tells {@code evicted} the keys the disk tier drops while it runs. */
  private static Opened open(Stack stack, Durability mode, SyncPolicy policy, Writes writes,
      StorageDevice device, Set<BlockKey> evicted) throws IOException {
    DiskTier disk = DiskTier.open(DiskTierConfig.builder(DIR, 24L << 20)
        .device(device)
        .superBlockBytes(256L << 10)
        .minFreeBytes(0)
        .syncPolicy(policy)
        .syncIntervalMillis(5)
        .checkpointJournalBytes(64 << 10)
        .reclaimBytesPerSecond(1L << 30)
        .directWrites(writes == Writes.DIRECT)
        .build());
    disk.listen(new BlockListener() {
      @Override
      public void stored(String tier, BlockKey key) {}

      @Override
      public void removed(String tier, BlockKey key) {
        evicted.add(key);
      }
    });
    if (stack == Stack.DISK) {
      return new Opened(disk, disk);
    }
    return new Opened(KvCacheBuilder.newBuilder()
        .ramBytes(256L << 10)
        .maxBlockBytes(64 << 10)
        .durability(mode)
        .spillQueueBlocks(SPILL_QUEUE)
        .spillThreads(SPILL_THREADS)
        .spillQueueWait(Duration.ofSeconds(30))
        .lowerTier(disk)
        .build(), disk);
  }

  @ParameterizedTest(name = "{0} {1} {2} {3}")
  @MethodSource("cells")
  void whatWasPromisedSurvivesPowerCutsAndNoWrongByteIsRead(Stack stack, Durability mode,
      SyncPolicy policy, Writes writes) throws Exception {
    long seed = 1000L * stack.ordinal() + 100L * mode.ordinal() + policy.ordinal()
        + 10_000L * writes.ordinal();
    SplittableRandom random = new SplittableRandom(seed);
    FaultyDevice device = new FaultyDevice(256L << 20, seed);
    AtomicLong versions = new AtomicLong();
    AtomicLong acks = new AtomicLong();
    Map<Integer, Set<Long>> everPut = new ConcurrentHashMap<>();
    Map<Integer, Set<Long>> everDeleted = new ConcurrentHashMap<>();
    // puts answered before the cut without being stored: they took nothing away
    Map<Integer, Set<Long>> refusedBeforeCut = new ConcurrentHashMap<>();
    AtomicLong onceKeys = new AtomicLong(ONCE_FROM);
    Map<Integer, Ack> floors = new HashMap<>();
    boolean promises = policy != SyncPolicy.NONE && mode != Durability.RAM_FIRST;
    // a write-behind put's answer leaves up to this many puts not yet on the disk
    long unwritten = mode == Durability.WRITE_BEHIND && stack == Stack.RAM_OVER_DISK
        ? SPILL_QUEUE + SPILL_THREADS + WRITERS : 0;
    int lostAcks = 0;
    int totalAcks = 0;
    int onceKept = 0; // promised once-keys read back, after a cut


    StorageDevice session = device.session();
    Set<BlockKey> evicted = ConcurrentHashMap.newKeySet(); // and deleted: of once-keys, evicted
    Opened opened = open(stack, mode, policy, writes, session, evicted);
    for (int cut = 0; cut < CUTS; cut++) {
      List<Ack> acked = new CopyOnWriteArrayList<>();
      // (syncs completed, acknowledgements so far), taken as the writers run
      List<long[]> snapshots = new CopyOnWriteArrayList<>();
      long[] atCut = new long[2];
      DiskTier disk = opened.disk();
      device.onCut(() -> {
        atCut[0] = disk.diskStats().syncs();
        atCut[1] = acks.get();
      });
      device.cutPowerAfter(200 + random.nextInt(4000));
      AtomicBoolean stop = new AtomicBoolean();
      List<Thread> threads = new ArrayList<>();
      StorageDevice current = session;
      KvCache cache = opened.cache();
      for (int w = 0; w < WRITERS; w++) {
        SplittableRandom r = random.split();
        int writer = w;
        threads.add(new Thread(() -> {
          int once = 0;
          while (!stop.get() && !device.cutSince(current)) {
            if (once < ONCE_PER_CUT && r.nextInt(32) == 0) { // a key of its own, written once
              once++;
              int key = (int) onceKeys.getAndIncrement();
              long version = versions.incrementAndGet();
              BlockKey k = Payloads.key(key);
              everPut.computeIfAbsent(key, x -> ConcurrentHashMap.newKeySet()).add(version);
              try {
                if (cache.put(k, Payloads.of(k, version, length(key))) == PutStatus.STORED) {
                  acked.add(new Ack(key, version, false, acks.incrementAndGet()));
                }
              } catch (RuntimeException e) {
                // the device lost power under the call: not acknowledged
              }
              continue;
            }
            // each key has one writer: its versions are stored in the order they are numbered
            int key = r.nextInt(KEYS / WRITERS) * WRITERS + writer;
            long version = versions.incrementAndGet();
            BlockKey k = Payloads.key(key);
            try {
              if (r.nextInt(8) == 0) {
                everDeleted.computeIfAbsent(key, x -> ConcurrentHashMap.newKeySet()).add(version);
                cache.delete(k);
                acked.add(new Ack(key, version, true, acks.incrementAndGet()));
              } else {
                everPut.computeIfAbsent(key, x -> ConcurrentHashMap.newKeySet()).add(version);
                if (cache.put(k, Payloads.of(k, version, length(key))) == PutStatus.STORED) {
                  acked.add(new Ack(key, version, false, acks.incrementAndGet()));
                } else if (!device.cutSince(current)) {
                  refusedBeforeCut.computeIfAbsent(key, x -> ConcurrentHashMap.newKeySet())
                      .add(version);
                }
              }
            } catch (RuntimeException e) {
              // the device lost power under the call: not acknowledged
            }
          }
        }));
      }
      threads.add(new Thread(() -> {
        while (!stop.get() && !device.cutSince(current)) {
          snapshots.add(new long[] {disk.diskStats().syncs(), acks.get()});
          try {
            Thread.sleep(1);
          } catch (InterruptedException e) {
            return;
          }
        }
      }));
      threads.forEach(Thread::start);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while (!device.cutSince(current) && System.nanoTime() < deadline) {
        Thread.sleep(1);
      }
      if (!device.cutSince(current)) {
        device.cutPower(); // the writers did too little on the device to reach the chosen one
      }
      stop.set(true);
      for (Thread t : threads) {
        t.join();
      }
      opened.close();

      // what was promised: acknowledgements up to a floor
      long floor = -1;
      if (promises && policy == SyncPolicy.ALWAYS) {
        floor = atCut[1] - unwritten;
      } else if (promises) {
        for (long[] s : snapshots) {
          if (s[0] + 2 <= atCut[0]) { // a sync started after the snapshot and ended before the cut
            floor = Math.max(floor, s[1] - unwritten);
          }
        }
      }
      for (Ack a : acked) {
        totalAcks++;
        if (a.sequence() <= floor) {
          floors.merge(a.key(), a, (old, nu) -> nu.version() > old.version() ? nu : old);
        }
      }

      session = device.session();
      Set<BlockKey> evictedBefore = Set.copyOf(evicted); // not what the reads below drop
      opened = open(stack, mode, policy, writes, session, evicted); // recovery never fails
      KvCache reopened = opened.cache();
      ByteBuffer dst = ByteBuffer.allocateDirect(Math.max(length(KEYS), length(ONCE_FROM + 15)));
      List<Integer> keys = new ArrayList<>();
      for (int key = 0; key < KEYS; key++) {
        keys.add(key);
      }
      for (int key = ONCE_FROM; key < onceKeys.get(); key++) {
        keys.add(key);
      }
      for (int key : keys) {
        BlockKey k = Payloads.key(key);
        GetStatus status = reopened.getInto(k, dst.clear());
        Ack promised = floors.get(key);
        String where = stack + " " + mode + " " + policy + ", cut " + cut + ", key " + key
            + ", promised " + promised;
        if (status == GetStatus.HIT) {
          long version = Payloads.verify(k, dst.flip()); // exactly the bytes of one version
          assertThat(everPut.getOrDefault(key, Set.of())).as(where).contains(version);
          if (promised != null && key >= ONCE_FROM) {
            onceKept++;
          }
          if (promised != null) {
            assertThat(version).as(where + ": a version older than promised")
                .isGreaterThanOrEqualTo(promised.delete() ? promised.version() + 1
                    : promised.version());
          }
        } else {
          assertThat(status).as(where).isEqualTo(GetStatus.MISS);
          // a miss is what was promised, or what a later delete (answered or not) made; over
          // RAM, a later put not refused before the cut too: it takes the disk's copy away
          // before it writes its own
          Set<Long> refused = refusedBeforeCut.getOrDefault(key, Set.of());
          boolean deletedSince = promised == null || promised.delete()
              || key >= ONCE_FROM && evictedBefore.contains(k)
              || everDeleted.getOrDefault(key, Set.of()).stream()
                  .anyMatch(v -> v > promised.version())
              || (stack == Stack.RAM_OVER_DISK && everPut.getOrDefault(key, Set.of()).stream()
                  .anyMatch(v -> v > promised.version() && !refused.contains(v)));
          if (!deletedSince) {
            lostAcks++;
          }
          assertThat(deletedSince).as(where + ": lost").isTrue();
        }
      }
    }
    opened.close();
    assertThat(device.cuts()).isEqualTo(CUTS);
    assertThat(totalAcks).as("operations acknowledged").isGreaterThan(CUTS * 10);
    assertThat(lostAcks).isZero();
    if (promises) {
      assertThat(floors).as("keys with a promise checked").isNotEmpty();
      assertThat(onceKept).as("promised keys written once, read back after a cut").isPositive();
    }
  }
}
