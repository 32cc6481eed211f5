package dev.kvcache.disk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.PutStatus;
import dev.kvcache.testkit.Payloads;
import dev.kvcache.tiered.KvCacheBuilder;
import dev.kvcache.tiered.TieredCache;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RamOverDiskRestartTest {

  private static final int BLOCK = 256 << 10;
  private static final int BLOCKS = 64; // 16 MiB through 4 MiB of RAM

  @TempDir Path dir;

  private KvCache open(boolean spillOnClose) throws IOException {
    return KvCacheBuilder.newBuilder()
        .ramBytes(4L << 20)
        .spillOnClose(spillOnClose)
        // a slow disk (writeback throttling) must not make the puts drop blocks: these tests
        // check what close and reopen keep, not what a full spill queue drops
        .spillQueueWait(Duration.ofSeconds(30))
        .maxBlockBytes(1 << 20)
        .lowerTier(DiskTier.open(DiskTierConfig.builder(dir, 64L << 20)
            .superBlockBytes(8L << 20)
            .minFreeBytes(0)
            .syncPolicy(SyncPolicy.NONE)
            .build()))
        .build();
  }

  /**
   * Without the writes on close, only the blocks spilled before it (about 50) would be found. A
   * spill may still drop a block under pressure (counted): every other block is found.
   */
  @Test
  void closingWritesWhatRamHoldsSoThatEveryBlockIsServedAfterAReopen() throws Exception {
    long dropped;
    try (KvCache cache = open(true)) {
      for (int i = 0; i < BLOCKS; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(cache.put(key, Payloads.of(key, 3, BLOCK))).isEqualTo(PutStatus.STORED);
      }
      dropped = ((TieredCache) cache).tieredStats().spillDrops();
      // far fewer than the 14 or so RAM holds at close, whose writes this test is about
      assertThat(dropped).as("blocks dropped on the way to disk").isLessThanOrEqualTo(4);
    }
    try (KvCache cache = open(true)) {
      assertThat(countServed(cache, 3)).isEqualTo(BLOCKS - dropped);
    }
  }

  /** Blocks served after a reopen, each checked to hold the bytes put; the rest must miss. */
  private static int countServed(KvCache cache, int seed) {
    int found = 0;
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    for (int i = 0; i < BLOCKS; i++) {
      BlockKey key = Payloads.key(i);
      GetStatus status = cache.getInto(key, dst.clear());
      if (status == GetStatus.HIT) {
        assertThat(Payloads.verify(key, dst.flip())).isEqualTo(seed);
        found++;
      } else {
        assertThat(status).isEqualTo(GetStatus.MISS);
      }
    }
    return found;
  }

  @Test
  void withoutSpillOnCloseTheBlocksSpilledBeforeCloseAreServedAfterAReopen() throws Exception {
    int spilled;
    try (KvCache cache = open(false)) {
      for (int i = 0; i < BLOCKS; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(cache.put(key, Payloads.of(key, 7, BLOCK))).isEqualTo(PutStatus.STORED);
      }
      TieredCache tiered = (TieredCache) cache;
      assertThat(tiered.awaitSpills(Duration.ofSeconds(30))).isTrue();
      spilled = (int) tiered.tieredStats().spills();
      assertThat(spilled + tiered.tieredStats().spillDrops())
          .as("RAM holds at most 16 of the 64 blocks").isGreaterThanOrEqualTo(BLOCKS - 16);
    }
    try (KvCache cache = open(false)) {
      assertThat(countServed(cache, 7)).as("every spilled block, and only blocks put").isEqualTo(spilled);
    }
  }
}
