package dev.kvcache.disk;

import static dev.kvcache.testkit.TierAssertions.assertHolds;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.disk.internal.FileSpace;
import dev.kvcache.disk.internal.RateLimiter;
import dev.kvcache.testkit.Payloads;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The file system has less free space than the tier's floor: at start-up nothing stored is
 * dropped (the tier opens degraded and refuses puts until space returns), and a running tier drops
 * its oldest super-blocks for the floor only when that is enough to reach it. The file system is
 * played by a {@link FileSpace} whose free space the test sets; {@link FullDiskTest} fills a real
 * one.
 */
class NoRoomTest {

  private static final int BLOCK = 64 << 10;
  private static final long SUPER_BLOCK = 1L << 20;
  private static final long FLOOR = 8L << 20;

  @TempDir Path temp;

  /** A file system of 1 TiB whose free space is whatever the test says. */
  private static final class SetSpace implements FileSpace {
    volatile long usable = 1L << 40;

    @Override
    public long usableBytes() {
      return usable;
    }

    @Override
    public long totalBytes() {
      return 1L << 40;
    }
  }

  private DiskTierConfig config(Path dir) {
    return DiskTierConfig.builder(dir, 64L << 20).superBlockBytes(SUPER_BLOCK).minFreeBytes(FLOOR)
        .syncPolicy(SyncPolicy.NONE).build();
  }

  private static void put(DiskTier tier, int from, int to, PutStatus expected) {
    for (int i = from; i < to; i++) {
      BlockKey key = Payloads.key(i);
      assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).as("put %d", i).isEqualTo(expected);
    }
  }

  @Test
  void aStartWithoutRoomDeletesNothingRefusesPutsAndRecoversWhenSpaceReturns() throws IOException {
    Path dir = temp.resolve("tier");
    SetSpace space = new SetSpace();
    try (DiskTier tier = DiskTier.open(config(dir), space)) {
      put(tier, 0, 40, PutStatus.STORED); // three super-blocks
    }
    List<Path> files = DiskFiles.superBlocks(dir);
    assertThat(files).hasSizeGreaterThan(2);

    space.usable = FLOOR / 2; // something else filled the file system while the tier was stopped
    try (DiskTier tier = DiskTier.open(config(dir), space)) {
      assertThat(DiskFiles.superBlocks(dir)).as("super-blocks after a start without room").isEqualTo(files);
      assertHolds(tier, 0, 40, 1, BLOCK);
      assertThat(tier.health().degraded()).isTrue();
      assertThat(tier.health().problems()).singleElement().asString()
          .contains("no room for a new super-block").contains("minFreeBytes");
      put(tier, 40, 45, PutStatus.REJECTED_NO_SPACE);
      assertThat(tier.contains(Payloads.key(40))).isFalse();
      assertThat(tier.stats().rejections()).isEqualTo(5);
      assertThat(DiskFiles.superBlocks(dir)).as("super-blocks after puts without room").isEqualTo(files);

      space.usable = 1L << 40; // space is back
      assertThat(tier.health().degraded()).as("health once space is back").isFalse();
      assertThat(DiskFiles.superBlocks(dir)).as("super-blocks after a health check").isEqualTo(files);
      put(tier, 40, 45, PutStatus.STORED);
      assertHolds(tier, 0, 45, 1, BLOCK);
    }
    try (DiskTier tier = DiskTier.open(config(dir), space)) {
      assertHolds(tier, 0, 45, 1, BLOCK);
      assertThat(tier.health().degraded()).isFalse();
    }
  }

  @Test
  void aRunningTierKeepsItsBlocksWhenDroppingThemCouldNotMakeRoom() throws IOException {
    SetSpace space = new SetSpace();
    try (DiskTier tier = DiskTier.open(config(temp.resolve("tier")), space)) {
      put(tier, 0, 40, PutStatus.STORED);
      space.usable = FLOOR - (16L << 20); // 16 MiB short: more than the tier's 3 MiB of files
      int stored = 0; // the active super-block takes what fits in it, then puts are refused
      while (tier.put(Payloads.key(40 + stored), Payloads.of(Payloads.key(40 + stored), 1, BLOCK))
          == PutStatus.STORED) {
        stored++;
        assertThat(stored).as("puts stored without room for a new super-block").isLessThan(16);
      }
      put(tier, 41 + stored, 60, PutStatus.REJECTED_NO_SPACE);
      assertThat(tier.diskStats().superBlocksDropped()).isZero();
      assertHolds(tier, 0, 40, 1, BLOCK);
      assertThat(tier.health().degraded()).isTrue();
    }
  }

  @Test
  void compactionWithoutRoomToMoveBlocksKeepsTheSuperBlock() throws Exception {
    SetSpace space = new SetSpace();
    try (DiskTier tier = DiskTier.open(config(temp.resolve("tier")), space)) {
      put(tier, 0, 40, PutStatus.STORED); // the first super-block holds blocks 0 to 14
      space.usable = FLOOR - (16L << 20); // no room for another super-block, even by dropping
      int stored = 0; // fill the active super-block: nowhere is left to move a block to
      while (tier.put(Payloads.key(40 + stored), Payloads.of(Payloads.key(40 + stored), 1, BLOCK))
          == PutStatus.STORED) {
        stored++;
      }
      for (int i = 0; i < 12; i++) { // the first super-block is a fifth live: compaction's pick
        tier.delete(Payloads.key(i));
      }
      long evictions = tier.stats().evictions();
      tier.reclaimOnce(new RateLimiter(1L << 30), () -> false);
      assertHolds(tier, 12, 40, 1, BLOCK);
      assertThat(tier.stats().evictions()).as("evictions").isEqualTo(evictions);
      assertThat(tier.diskStats().superBlocksDropped()).isZero();

      space.usable = 1L << 40; // room again: the compaction moves the blocks, then drops
      put(tier, 100, 101, PutStatus.STORED); // a new super-block, for the moves
      tier.reclaimOnce(new RateLimiter(1L << 30), () -> false);
      // the tier's own reclaimer, woken by the new super-block, may be the one that drops it
      long deadline = System.nanoTime() + 10_000_000_000L;
      while (tier.diskStats().superBlocksDropped() == 0 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertThat(tier.diskStats().superBlocksDropped()).isEqualTo(1);
      assertHolds(tier, 12, 40, 1, BLOCK);
      assertThat(tier.stats().evictions()).as("evictions").isEqualTo(evictions);
    }
  }

  @Test
  void aTierLargerThanItsFileSystemDropsItsOldestToStayAboveTheFloor() throws IOException {
    Path dir = temp.resolve("tier");
    long fileSystem = 24L << 20;
    FileSpace space = new FileSpace() { // the tier's own files are all that fill it
      @Override
      public long usableBytes() throws IOException {
        long used = 0;
        try (Stream<Path> files = Files.list(dir)) {
          for (Path f : (Iterable<Path>) files::iterator) {
            used += Files.size(f);
          }
        }
        return fileSystem - used;
      }

      @Override
      public long totalBytes() {
        return fileSystem;
      }
    };
    try (DiskTier tier = DiskTier.open(config(dir), space)) {
      put(tier, 0, 400, PutStatus.STORED); // 25 MiB into 16 MiB above the floor
      assertThat(tier.diskStats().superBlocksDropped()).isPositive();
      assertThat(space.usableBytes()).isGreaterThanOrEqualTo(FLOOR);
      assertHolds(tier, 380, 400, 1, BLOCK);
      assertThat(tier.health().degraded()).isFalse();
    }
  }

  @Test
  void theDefaultFloorIsTheSmallerOfOneGibibyteAndFivePercent() throws IOException {
    assertThat(DiskTierConfig.defaultMinFreeBytes(256L << 20)).isEqualTo((256L << 20) / 100 * 5);
    assertThat(DiskTierConfig.defaultMinFreeBytes(1L << 40)).isEqualTo(1L << 30);
    SetSpace space = new SetSpace();
    space.usable = 32L << 20; // a 1 TiB file system with 32 MiB free: under the 1 GiB default
    DiskTierConfig config = DiskTierConfig.builder(temp.resolve("d"), 64L << 20)
        .superBlockBytes(SUPER_BLOCK).build();
    assertThat(config.minFreeBytes()).isEqualTo(-1);
    try (DiskTier tier = DiskTier.open(config, space)) {
      assertThat(tier.health().degraded()).isTrue();
      put(tier, 0, 1, PutStatus.REJECTED_NO_SPACE);
    }
  }
}
