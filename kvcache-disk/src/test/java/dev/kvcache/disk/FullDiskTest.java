package dev.kvcache.disk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.testkit.Payloads;
import dev.kvcache.testkit.Tmpfs;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The file system fills up under the tier: a 16 MiB tmpfs, mounted for the test (which needs
 * root), filled by another file once the tier holds some blocks. Puts fail with a status, reads go
 * on, a close on the full disk (which cannot write its checkpoint) loses nothing, and once space
 * is back the tier works again.
 */
class FullDiskTest {

  private static final int BLOCK = 64 << 10;

  @TempDir Path temp;
  private Path mount;

  @BeforeEach
  void mountSmallFileSystem() throws IOException, InterruptedException {
    mount = Tmpfs.mount(temp.resolve("small"), "16m");
  }

  @AfterEach
  void unmount() throws IOException, InterruptedException {
    Tmpfs.unmount(mount);
  }

  private DiskTierConfig config() {
    return DiskTierConfig.builder(mount.resolve("tier"), 64L << 20).superBlockBytes(1L << 20)
        .minFreeBytes(0).syncPolicy(SyncPolicy.NONE).build();
  }

  private static void assertHolds(DiskTier tier, int from, int to) {
    for (int i = from; i < to; i++) {
      BlockKey key = Payloads.key(i);
      ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
      assertThat(tier.getInto(key, dst)).as("block %d", i).isEqualTo(GetStatus.HIT);
      assertThat(Payloads.verify(key, dst.flip())).isEqualTo(1);
    }
  }

  @Test
  void putsFailWithAStatusReadsGoOnAndNothingStoredIsLost() throws IOException {
    Path filler = mount.resolve("filler");
    try (DiskTier tier = DiskTier.open(config())) {
      for (int i = 0; i < 20; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
      }
      fill(filler);
      // the active super-block has room for these records, but the file system has no pages
      for (int i = 20; i < 25; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).as("put %d on a full disk", i)
            .isEqualTo(PutStatus.REJECTED_NO_SPACE);
        assertThat(tier.contains(key)).isFalse();
      }
      assertHolds(tier, 0, 20);
      assertThat(tier.stats().rejections()).isEqualTo(5);
    } // closing on the full disk cannot write a checkpoint: the journal stays for the next open
    Files.delete(filler);
    try (DiskTier tier = DiskTier.open(config())) {
      assertHolds(tier, 0, 20);
      for (int i = 20; i < 25; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
      }
      assertHolds(tier, 0, 25);
    }
    try (DiskTier tier = DiskTier.open(config())) {
      assertHolds(tier, 0, 25);
    }
  }

  @Test
  void aStartOnAFullDiskDeletesNothingAndTakesPutsOnceSpaceIsBack() throws IOException {
    Path filler = mount.resolve("filler");
    try (DiskTier tier = DiskTier.open(config())) {
      for (int i = 0; i < 20; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
      }
    }
    fill(filler);
    try (DiskTier tier = DiskTier.open(config())) {
      assertHolds(tier, 0, 20);
      assertThat(tier.health().degraded()).as("a tier opened on a full disk").isTrue();
      BlockKey key = Payloads.key(20);
      assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.REJECTED_NO_SPACE);
      Files.delete(filler);
      assertThat(tier.health().degraded()).as("once space is back").isFalse();
      assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
    }
    try (DiskTier tier = DiskTier.open(config())) {
      assertHolds(tier, 0, 21);
    }
  }

  /** Writes {@code file} until the file system is full. */
  private static void fill(Path file) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      ByteBuffer chunk = ByteBuffer.allocate(4096);
      while (true) {
        ch.write(chunk.clear());
      }
    } catch (IOException e) {
      assertThat(e).hasMessageContaining("No space left");
    }
  }
}
