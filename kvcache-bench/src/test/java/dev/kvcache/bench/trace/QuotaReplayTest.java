package dev.kvcache.bench.trace;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tenant that replays real requests (the first 3,000 of Mooncake's conversation trace) keeps its
 * hit ratio within 1% of its run alone while another floods the cache at ten times its quota, in
 * RAM and with a disk tier holding most of what it hits; the same flood without quotas takes a
 * large part of it.
 */
class QuotaReplayTest {

  static MooncakeTrace slice() throws Exception {
    return MooncakeTrace.load(Path.of(QuotaReplayTest.class
        .getResource("/traces/mooncake_conversation_first3000.jsonl.zst").toURI()));
  }

  @Test
  void inRamAFloodAtTenTimesItsQuotaLeavesTheOthersHitRatioAsItWasAlone() throws Exception {
    MooncakeTrace trace = slice();
    QuotaReplay replay = new QuotaReplay();
    replay.ramBlocks = 20_000;
    replay.floodFactor = 10;

    QuotaReplay.Result alone = replay.replay(trace, true, false);
    QuotaReplay.Result flooded = replay.replay(trace, true, true);
    assertThat(alone.hitRatio()).as("alone, a hit ratio a flood could take").isGreaterThan(0.15);
    assertThat(flooded.hitRatio()).as("flooded, against alone " + alone.hitRatio())
        .isBetween(alone.hitRatio() - 0.01, alone.hitRatio() + 0.01);

    QuotaReplay.Result unguardedAlone = replay.replay(trace, false, false);
    QuotaReplay.Result unguarded = replay.replay(trace, false, true);
    assertThat(unguarded.hitRatio()).as("flooded without quotas, against alone "
        + unguardedAlone.hitRatio()).isLessThan(unguardedAlone.hitRatio() - 0.04);
  }

  @Test
  void onDiskAFloodAtTenTimesItsQuotaLeavesTheOthersHitRatioAsItWasAlone(@TempDir Path dir)
      throws Exception {
    MooncakeTrace trace = slice();
    QuotaReplay replay = new QuotaReplay();
    replay.ramBlocks = 1000; // RAM holds little: the hits are the disk's
    replay.diskBlocks = 8000;
    replay.floodFactor = 10;
    replay.dir = dir;

    QuotaReplay.Result alone = replay.replay(trace, true, false);
    QuotaReplay.Result flooded = replay.replay(trace, true, true);
    QuotaReplay.Result unguardedAlone = replay.replay(trace, false, false);
    assertThat(alone.hitRatio()).as("alone, with quotas").isGreaterThan(0.05);
    assertThat(flooded.hitRatio()).as("flooded, against alone " + alone.hitRatio())
        .isBetween(alone.hitRatio() - 0.01, alone.hitRatio() + 0.01);
    QuotaReplay.Result unguarded = replay.replay(trace, false, true);
    assertThat(unguarded.hitRatio()).as("flooded without quotas, against alone "
        + unguardedAlone.hitRatio()).isLessThan(unguardedAlone.hitRatio() - 0.02);
  }
}
