package dev.kvcache.disk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.testkit.Payloads;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The background scrub finds a block damaged at rest before any read meets it: the block is
 * dropped and counted, every other block reads back whole; with a rate of 0 there is no scrub.
 */
class ScrubTest {

  private static final int BLOCK = 64 << 10;
  /** Where the first record's payload starts: the second page (the first is the file header). */
  private static final long FIRST_PAYLOAD = 8192;

  @TempDir Path temp;

  private static DiskTierConfig config(Path dir, long scrubRate) {
    return DiskTierConfig.builder(dir, 64L << 20).superBlockBytes(4L << 20).minFreeBytes(0)
        .syncPolicy(SyncPolicy.NONE).scrubBytesPerSecond(scrubRate).build();
  }

  private static void damageFirstRecord(Path dir) throws Exception {
    try (FileChannel ch = FileChannel.open(dir.resolve("sb-00000001.kvsb"),
        StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.wrap(new byte[] {1, 2, 3, 4}), FIRST_PAYLOAD + 1000);
    }
  }

  @Test
  void damageAtRestIsFoundAndDroppedBeforeARead() throws Exception {
    Path dir = temp.resolve("tier");
    try (DiskTier tier = DiskTier.open(config(dir, 1L << 30))) {
      for (int i = 0; i < 20; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
      }
      damageFirstRecord(dir); // the mapping the tier reads sees it at once
      long deadline = System.nanoTime() + 20_000_000_000L;
      while (tier.diskStats().scrubDamaged() == 0 && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      DiskStats stats = tier.diskStats();
      // the pass that found the damage may still be running, and may have listed the records
      // before the last puts; the pass after it started with all of them written
      long passesBefore = stats.scrubPasses() + 1;
      assertThat(stats.scrubDamaged()).as("damaged blocks the scrub found").isEqualTo(1);
      assertThat(stats.corruptBlocks()).isEqualTo(1);
      assertThat(tier.contains(Payloads.key(0))).as("the damaged block, before any read").isFalse();
      ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
      for (int i = 1; i < 20; i++) {
        assertThat(tier.getInto(Payloads.key(i), dst.clear())).isEqualTo(GetStatus.HIT);
        assertThat(Payloads.verify(Payloads.key(i), dst.flip())).isEqualTo(1);
      }
      while (tier.diskStats().scrubPasses() <= passesBefore && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertThat(tier.diskStats().scrubPasses()).isGreaterThan(passesBefore);
      assertThat(tier.diskStats().scrubbedBytes()).isGreaterThanOrEqualTo(19L * BLOCK);
    }
  }

  @Test
  void aRateOfZeroMeansNoScrub() throws Exception {
    Path dir = temp.resolve("tier");
    try (DiskTier tier = DiskTier.open(config(dir, 0))) {
      BlockKey key = Payloads.key(0);
      tier.put(key, Payloads.of(key, 1, BLOCK));
      damageFirstRecord(dir);
      Thread.sleep(300); // what a scrub at any rate would have done by now
      assertThat(tier.diskStats().scrubbedBytes()).isZero();
      assertThat(tier.contains(key)).as("damage no read has met yet").isTrue();
      assertThat(tier.getInto(key, ByteBuffer.allocateDirect(BLOCK))).isEqualTo(GetStatus.MISS);
    }
  }
}
