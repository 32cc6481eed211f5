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
    assertThat(TraceReplay.replay(SMALL, 2, "lru", c -> new LruModel(2)).hits()).isEqualTo(2);
  }

  @Test
  void orphansFirstEvictsAChainFromItsTail() {
    MooncakeTrace reuse = new MooncakeTrace("tail", new int[][] {{0, 1, 2}, {3, 4}, {0, 1}});
    // orphans first keeps the head 0-1 and drops the tail 2; LRU drops the head and keeps the tail
    assertThat(TraceReplay.replay(reuse, 4, "lru-orphans-first", c -> new OrphanFirstLruModel(4)).hits())
        .isEqualTo(2);
    assertThat(TraceReplay.replay(reuse, 4, "lru", c -> new LruModel(4)).hits()).isZero();
  }

  @Test
  void theReuseOracleAdmitsOnlyBlocksUsedAgain() {
    // blocks 1 and 2 are never used again: only 0 and 3 take space, so both stay
    MooncakeTrace trace = new MooncakeTrace("oracle", new int[][] {{0, 1}, {3, 2}, {0}, {3}});
    assertThat(TraceReplay.replay(trace, 2, "lru-reuse-oracle",
        c -> new ReuseOracleLruModel(trace, 2)).hits()).isEqualTo(2);
    assertThat(TraceReplay.replay(trace, 2, "lru", c -> new LruModel(2)).hits()).isZero();
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
    assertThat(TraceReplay.replay(trace, 4, "w", c -> new WindowTinyLfuModel(4, 0.25)).hits())
        .as("hits on block 0: requests 2, 3 and the last").isEqualTo(3);
    assertThat(TraceReplay.replay(trace, 4, "lru", c -> new LruModel(4)).hits()).isEqualTo(2);
  }

  @Test
  void theCeilingKeepsWhatIsUsedAgainSoonestAndBypassesBlocksNeverUsedAgain() {
    // block 2 is never used again, so it does not displace block 1
    assertThat(TraceReplay.replay(SMALL, 2, "ceiling", c -> new BeladyModel(SMALL, 2)).hits())
        .isEqualTo(3);
  }

  @Test
  void onARandomPrefixTraceTheCeilingIsNeverBelowLruAndUnlimitedCapacityMakesThemEqual() {
    MooncakeTrace trace = randomTrace(2000, 7);
    int distinct = trace.distinctBlocks();
    for (long capacity : new long[] {10, 50, 200, 1000}) {
      long lru = TraceReplay.replay(trace, capacity, "lru", c -> new LruModel(capacity)).hits();
      long ceiling = TraceReplay.replay(trace, capacity, "ceiling",
          c -> new BeladyModel(trace, capacity)).hits();
      assertThat(ceiling).as("capacity %d", capacity).isGreaterThanOrEqualTo(lru);
    }
    long lru = TraceReplay.replay(trace, 0, "lru", c -> new LruModel(distinct)).hits();
    long ceiling = TraceReplay.replay(trace, 0, "ceiling", c -> new BeladyModel(trace, distinct)).hits();
    long ours = TraceReplay.replay(trace, 0, "kvcache", c -> TraceReplay.kvcache(distinct)).hits();
    assertThat(ceiling).isEqualTo(lru);
    assertThat(ours).as("the cache with room for every block").isEqualTo(lru);
  }

  @Test
  void theCacheLoadsTheBlocksItFindsAndStaysWithinItsCapacity() {
    MooncakeTrace trace = randomTrace(2000, 11);
    long hits = TraceReplay.replay(trace, 50, "kvcache", c -> TraceReplay.kvcache(50)).hits();
    long unlimited = TraceReplay.replay(trace, 0, "kvcache",
        c -> TraceReplay.kvcache(trace.distinctBlocks())).hits();
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
