package dev.kvcache.disk;

import static dev.kvcache.testkit.TierAssertions.assertHolds;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.testkit.Payloads;
import dev.kvcache.testkit.Tmpfs;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The file system fills up under the tier: a 16 MiB tmpfs, mounted for the test (which needs
 * root), filled by another file once the tier holds some blocks. Puts fail with a status, reads go
 * on, a close on the full disk (which cannot write its checkpoint) loses nothing, and once space
 * is back the tier works again.
 */
class FullDiskTest {

  private static final int BLOCK = 64 << 10;

  @RegisterExtension final Tmpfs small = new Tmpfs("16m");

  private DiskTierConfig config() {
    return DiskTierConfig.builder(small.path().resolve("tier"), 64L << 20).superBlockBytes(1L << 20)
        .minFreeBytes(0).syncPolicy(SyncPolicy.NONE).build();
  }

  @Test
  void putsFailWithAStatusReadsGoOnAndNothingStoredIsLost() throws IOException {
    Path filler = small.path().resolve("filler");
    try (DiskTier tier = DiskTier.open(config())) {
      for (int i = 0; i < 20; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
      }
      Tmpfs.fill(filler);
      // the active super-block has room for these records, but the file system has no pages
      for (int i = 20; i < 25; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).as("put %d on a full disk", i)
            .isEqualTo(PutStatus.REJECTED_NO_SPACE);
        assertThat(tier.contains(key)).isFalse();
      }
      assertHolds(tier, 0, 20, 1, BLOCK);
      assertThat(tier.stats().rejections()).isEqualTo(5);
    } // closing on the full disk cannot write a checkpoint: the journal stays for the next open
    Files.delete(filler);
    try (DiskTier tier = DiskTier.open(config())) {
      assertHolds(tier, 0, 20, 1, BLOCK);
      for (int i = 20; i < 25; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
      }
      assertHolds(tier, 0, 25, 1, BLOCK);
    }
    try (DiskTier tier = DiskTier.open(config())) {
      assertHolds(tier, 0, 25, 1, BLOCK);
    }
  }

  @Test
  void aStartOnAFullDiskDeletesNothingAndTakesPutsOnceSpaceIsBack() throws IOException {
    Path filler = small.path().resolve("filler");
    try (DiskTier tier = DiskTier.open(config())) {
      for (int i = 0; i < 20; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
      }
    }
    Tmpfs.fill(filler);
    try (DiskTier tier = DiskTier.open(config())) {
      assertHolds(tier, 0, 20, 1, BLOCK);
      assertThat(tier.health().degraded()).as("a tier opened on a full disk").isTrue();
      BlockKey key = Payloads.key(20);
      assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.REJECTED_NO_SPACE);
      Files.delete(filler);
      assertThat(tier.health().degraded()).as("once space is back").isFalse();
      assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
    }
    try (DiskTier tier = DiskTier.open(config())) {
      assertHolds(tier, 0, 21, 1, BLOCK);
    }
  }
}
