package dev.kvcache.tiered;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.SharedMemorySlice;
import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.spi.Tier;
import dev.kvcache.testkit.Payloads;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bytes damaged in RAM (here its shared memory, written over by another process) are never copied
 * to the lower tier under a fresh checksum, where they would read back as intact: a spill or the
 * write of RAM's blocks on close checks them against the CRC32C RAM stored them with first.
 */
class DamagedRamCopyTest {

  private static final int BLOCK = 64 << 10;

  @TempDir Path shm;

  private static void damage(SharedMemorySlice slice) throws IOException {
    try (RandomAccessFile f = new RandomAccessFile(slice.file().toFile(), "rw")) {
      long at = slice.offset() + slice.length() / 3;
      f.seek(at);
      int b = f.read();
      f.seek(at);
      f.write(b ^ 1);
    }
  }

  /**
   * A spill queue with room for every block the test puts: a put that finds RAM's memory pinned by
   * blocks on their way down evicts up to four times its size, and a full queue would drop intact
   * blocks too, which is not what this test counts.
   */
  private TieredCache open(Tier lower) {
    return new TieredCache(RamTierConfig.ofCapacity(1L << 20).withMaxBlockBytes(BLOCK)
        .withSharedMemory(shm), lower, new TieredCacheConfig(32, Duration.ofSeconds(30), false,
        true, Durability.RAM_FIRST, 1));
  }

  @Test
  void aBlockDamagedInRamIsNeitherSpilledNorWrittenOnClose() throws Exception {
    RamTier lower = new RamTier(RamTierConfig.ofCapacity(8L << 20).withMaxBlockBytes(BLOCK));
    GatedTier below = new GatedTier(lower);
    below.keepInnerOpen = true; // to read what the close wrote
    BlockKey spilled = Payloads.key(0);
    BlockKey kept = Payloads.key(1);
    try (TieredCache cache = open(below)) {
      for (BlockKey k : new BlockKey[] {spilled, kept}) {
        assertThat(cache.put(k, Payloads.of(k, 1, BLOCK))).isEqualTo(PutStatus.STORED);
        try (BlockLease lease = cache.get(k)) {
          damage(lease.sharedMemory().orElseThrow());
        }
      }
      // the damaged block is the coldest: new puts evict it, and the spill thread must skip it
      for (int i = 2; i < 24; i++) {
        BlockKey k = Payloads.key(i);
        assertThat(cache.put(k, Payloads.of(k, 1, BLOCK))).isEqualTo(PutStatus.STORED);
        try (BlockLease lease = cache.get(kept)) { // hot: stays in RAM
          assertThat(lease.status()).isEqualTo(GetStatus.HIT);
        }
      }
      assertThat(cache.awaitSpills(Duration.ofSeconds(30))).isTrue();
      assertThat(lower.contains(spilled)).as("damaged in RAM, not spilled").isFalse();
      assertThat(lower.contains(Payloads.key(3))).as("intact blocks are spilled").isTrue();
      assertThat(cache.tieredStats().spillDrops()).as("only the damaged block is dropped")
          .isEqualTo(1);
    }
    assertThat(lower.contains(kept)).as("damaged in RAM, not written on close").isFalse();
    assertThat(lower.contains(Payloads.key(23))).as("intact blocks are written on close").isTrue();
    lower.close();
  }
}
