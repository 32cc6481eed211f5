package dev.kvcache.bench.trace;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TierReplayTest {

  /** Conversations of chained blocks that come back, 150 distinct blocks in all. */
  private static MooncakeTrace conversations() {
    SplittableRandom random = new SplittableRandom(3);
    int[][] requests = new int[120][];
    for (int r = 0; r < requests.length; r++) {
      int conversation = random.nextInt(30);
      int length = 1 + random.nextInt(5);
      requests[r] = new int[length];
      for (int i = 0; i < length; i++) {
        requests[r][i] = conversation * 5 + i;
      }
    }
    return new MooncakeTrace("conversations", requests);
  }

  @Test
  void tiersThatHoldEverythingHitAsLruAndEachHitCountsInTheTierThatServedIt(@TempDir Path dir)
      throws Exception {
    TierReplay replay = new TierReplay();
    replay.dir = dir;
    replay.blocksPerSecond = 1e12;
    MooncakeTrace trace = conversations();

    TierReplay.Result disk = replay.replay(trace, "disk", 8 * 32, 0, 32);
    assertThat(disk.diskHits()).isPositive().isEqualTo(disk.lruHits());
    assertThat(disk.ramHits() + disk.spillHits()).isZero();

    TierReplay.Result tiered = replay.replay(trace, "ram-over-disk", 8 * 32, 16, 32);
    assertThat(tiered.hits()).as("nothing is lost between the tiers").isEqualTo(tiered.lruHits());
    assertThat(tiered.ramHits()).isPositive();
    assertThat(tiered.diskHits()).as("RAM holds 16 of 150 blocks: the rest come from disk")
        .isPositive();
  }
}
