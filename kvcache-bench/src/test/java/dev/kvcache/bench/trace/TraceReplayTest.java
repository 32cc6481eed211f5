package dev.kvcache.bench.trace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TraceReplayTest {

  /** Two requests share block 0; the third repeats the first. */
  private static final MooncakeTrace SMALL =
      new MooncakeTrace("small", new int[][] {{0, 1}, {0, 2}, {0, 1}});

  @Test
  void lruCountsLeadingHitsAndEvictsTheLeastRecentlyUsed() {
    // after request 2, block 1 is the least recently used and makes room for block 2
    assertThat(TraceReplay.replay(SMALL, SMALL, 2, "lru",
        new LruModel(2))[0].hits()).isEqualTo(2);
  }

  @Test
  void orphansFirstEvictsAChainFromItsTail() {
    MooncakeTrace reuse = new MooncakeTrace("tail", new int[][] {{0, 1, 2}, {3, 4}, {0, 1}});
    // orphans first keeps the head 0-1 and drops the tail 2; LRU drops the head and keeps the tail
    assertThat(TraceReplay.replay(reuse, reuse, 4, "lru-orphans-first",
        new OrphanFirstLruModel(4))[0].hits())
        .isEqualTo(2);
    assertThat(TraceReplay.replay(reuse, reuse, 4, "lru",
        new LruModel(4))[0].hits()).isZero();
  }

  @Test
  void theReuseOracleAdmitsOnlyBlocksUsedAgain() {
    // blocks 1 and 2 are never used again: only 0 and 3 take space, so both stay
    MooncakeTrace trace = new MooncakeTrace("oracle", new int[][] {{0, 1}, {3, 2}, {0}, {3}});
    assertThat(TraceReplay.replay(trace, trace, 2, "lru-reuse-oracle",
        new ReuseOracleLruModel(trace, 2))[0].hits()).isEqualTo(2);
    assertThat(TraceReplay.replay(trace, trace, 2, "lru",
        new LruModel(2))[0].hits()).isZero();
  }

  @Test
  void windowTinyLfuKeepsAFrequentBlockThatLruLoses() {
    // block 0 is seen three times, then a scan of one-off blocks passes; LRU loses block 0
    int[][] requests = new int[13][];
    requests[0] = new int[] {0};
    requests[1] = new int[] {0};
    requests[2] = new int[] {0};
    for (int i = 3; i < 12; i++) {
      requests[i] = new int[] {100 + i};
    }
    requests[12] = new int[] {0};
    MooncakeTrace trace = new MooncakeTrace("scan", requests);
    assertThat(TraceReplay.replay(trace, trace, 4, "w",
        new WindowTinyLfuModel(4, 0.25))[0].hits())
        .as("hits on block 0: requests 2, 3 and the last").isEqualTo(3);
    assertThat(TraceReplay.replay(trace, trace, 4, "lru",
        new LruModel(4))[0].hits()).isEqualTo(2);
  }

  @Test
  void skipLastLeavesARequestsLastBlockOutUnlessItWasFound() {
    MooncakeTrace trace =
        new MooncakeTrace("last", new int[][] {{1, 2, 3}, {1, 2, 3}, {1, 2}, {1, 2}});
    // 3 is never cached; {1, 2} is found whole the second time, so its last block stays
    assertThat(TraceReplay.replay(trace, trace, 10, "lru-skip-last",
        new LruModel(10, true))[0].hits())
        .isEqualTo(2 + 2 + 2);
  }

  @Test
  void theRamTierUnderItsDefaultPolicyHitsExactlyAsLru() {
    MooncakeTrace trace = randomTrace(3000, 11);
    for (long capacity : new long[] {20, 100, 400}) {
      long lru = TraceReplay.replay(trace, trace, capacity, "lru", new LruModel(capacity))[0].hits();
      long ours = TraceReplay.replay(trace, trace, capacity, "kvcache",
          TraceReplay.kvcache(capacity))[0].hits();
      assertThat(ours).as("capacity %d", capacity).isEqualTo(lru).isPositive();
    }
  }

  @Test
  void sieveGivesAHitBlockAnotherRoundAndEvictsTheOldestUnvisited() {
    // 1 and 2 cached; 1 hit (visited); 3 evicts 2, not 1; then 1 hits and 2 misses
    MooncakeTrace trace = new MooncakeTrace("sieve", new int[][] {{1}, {2}, {1}, {3}, {1}, {2}});
    assertThat(TraceReplay.replay(trace, trace, 2, "sieve", new SieveModel(2))[0].hits())
        .isEqualTo(2);
  }

  /** Block 0 three times, then a scan of 30 blocks used once, then block 0 again. */
  private static MooncakeTrace hotBlockThenScan() {
    int[][] requests = new int[34][];
    requests[0] = new int[] {0};
    requests[1] = new int[] {0};
    requests[2] = new int[] {0};
    for (int i = 0; i < 30; i++) {
      requests[3 + i] = new int[] {100 + i};
    }
    requests[33] = new int[] {0};
    return new MooncakeTrace("scan", requests);
  }

  @Test
  void s3FifoAndArcKeepAReusedBlockThroughAScanThatLruLetsThrough() {
    MooncakeTrace trace = hotBlockThenScan();
    assertThat(TraceReplay.replay(trace, trace, 10, "lru", new LruModel(10))[0].hits())
        .as("LRU: the two repeats only").isEqualTo(2);
    assertThat(TraceReplay.replay(trace, trace, 10, "s3fifo", new S3FifoModel(10))[0].hits())
        .as("S3-FIFO: and after the scan").isEqualTo(3);
    assertThat(TraceReplay.replay(trace, trace, 10, "arc", new ArcModel(10))[0].hits())
        .as("ARC: and after the scan").isEqualTo(3);
  }

  @Test
  void copiesShareNoBlockAndLruHitsEachCopyAlike() {
    MooncakeTrace one = randomTrace(500, 3);
    MooncakeTrace three = one.repeated(3);
    assertThat(three.requests().length).isEqualTo(1500);
    assertThat(three.distinctBlocks()).isEqualTo(3 * one.distinctBlocks());
    // a cache full of the copy before evicts those blocks first under LRU, as if it were empty
    TraceReplay.Result[] perCopy = TraceReplay.replay(three, one, 50, "lru", new LruModel(50));
    assertThat(perCopy).hasSize(3);
    assertThat(perCopy[1].hits()).isEqualTo(perCopy[0].hits()).isEqualTo(perCopy[2].hits());
    assertThat(perCopy[0].hits()).isPositive();
    assertThat(perCopy[2].copy()).isEqualTo(3);
    assertThatThrownBy(() -> one.repeated(0)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void theCeilingKeepsWhatIsUsedAgainSoonestAndBypassesBlocksNeverUsedAgain() {
    // block 2 is never used again, so it does not displace block 1
    assertThat(TraceReplay.replay(SMALL, SMALL, 2, "ceiling",
        new BeladyModel(SMALL, 2))[0].hits())
        .isEqualTo(3);
  }

  @Test
  void onARandomPrefixTraceTheCeilingIsNeverBelowLruAndUnlimitedCapacityMakesThemEqual() {
    MooncakeTrace trace = randomTrace(2000, 7);
    int distinct = trace.distinctBlocks();
    for (long capacity : new long[] {10, 50, 200, 1000}) {
      long lru = TraceReplay.replay(trace, trace, capacity, "lru",
        new LruModel(capacity))[0].hits();
      long ceiling = TraceReplay.replay(trace, trace, capacity, "ceiling",
        new BeladyModel(trace, capacity))[0].hits();
      assertThat(ceiling).as("capacity %d", capacity).isGreaterThanOrEqualTo(lru);
    }
    long lru = TraceReplay.replay(trace, trace, 0, "lru",
        new LruModel(distinct))[0].hits();
    long ceiling = TraceReplay.replay(trace, trace, 0, "ceiling",
        new BeladyModel(trace, distinct))[0].hits();
    long ours = TraceReplay.replay(trace, trace, 0, "kvcache",
        TraceReplay.kvcache(distinct))[0].hits();
    assertThat(ceiling).isEqualTo(lru);
    assertThat(ours).as("the cache with room for every block").isEqualTo(lru);
  }

  @Test
  void theCacheLoadsTheBlocksItFindsAndStaysWithinItsCapacity() {
    MooncakeTrace trace = randomTrace(2000, 11);
    long hits = TraceReplay.replay(trace, trace, 50, "kvcache",
        TraceReplay.kvcache(50))[0].hits();
    long unlimited = TraceReplay.replay(trace, trace, 0, "kvcache",
        TraceReplay.kvcache(trace.distinctBlocks()))[0].hits();
    assertThat(hits).isPositive().isLessThan(unlimited);
  }

  @Test
  void loadsJsonLinesKeepingOnlyTheBlockIds(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("t.jsonl");
    Files.writeString(file, """
        {"timestamp": 0, "input_length": 700, "output_length": 5, "hash_ids": [0, 1]}
        {"timestamp": 9, "hash_ids": [0, 2, 3], "extra": {"nested": [1, 2]}}
        """);
    MooncakeTrace trace = MooncakeTrace.load(file);
    assertThat(trace.name()).isEqualTo("t");
    assertThat(trace.requests()).isDeepEqualTo(new int[][] {{0, 1}, {0, 2, 3}});
    assertThat(trace.blockAccesses()).isEqualTo(5);
    assertThat(trace.distinctBlocks()).isEqualTo(4);
    assertThat(trace.blocksUsedOnce()).isEqualTo(3);
    assertThat(trace.medianReuseDistance()).isEqualTo(2); // block 0: accesses 0 and 2
  }

  @Test
  void aRequestWithoutBlockIdsIsAnErrorNamingIt(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("bad.jsonl");
    Files.writeString(file, "{\"hash_ids\": [1]}\n{\"timestamp\": 3}\n");
    assertThatThrownBy(() -> MooncakeTrace.load(file))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("request 2 has no hash_ids");
  }

  /** Requests that extend one of a few shared prefixes (chained ids), then add fresh blocks. */
  private static MooncakeTrace randomTrace(int requests, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    int[][] prefixes = new int[20][];
    int nextId = 0;
    for (int p = 0; p < prefixes.length; p++) {
      prefixes[p] = new int[1 + random.nextInt(8)];
      for (int i = 0; i < prefixes[p].length; i++) {
        prefixes[p][i] = nextId++;
      }
    }
    int[][] out = new int[requests][];
    for (int r = 0; r < requests; r++) {
      int[] prefix = prefixes[(int) Math.min(prefixes.length - 1, Math.abs(random.nextGaussian()) * 5)];
      int fresh = random.nextInt(6);
      out[r] = new int[prefix.length + fresh];
      System.arraycopy(prefix, 0, out[r], 0, prefix.length);
      for (int i = 0; i < fresh; i++) {
        out[r][prefix.length + i] = nextId++;
      }
    }
    return new MooncakeTrace("random", out);
  }
}
