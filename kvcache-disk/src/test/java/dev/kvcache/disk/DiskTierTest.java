package dev.kvcache.disk;

import static dev.kvcache.testkit.TierAssertions.assertHolds;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.codec.BlockCodec;
import dev.kvcache.codec.Filter;
import dev.kvcache.testkit.Payloads;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DiskTierTest {

  private static final int BLOCK = 64 << 10;

  @TempDir Path temp;

  private DiskTierConfig.Builder config(Path dir) {
    return DiskTierConfig.builder(dir, 64L << 20).superBlockBytes(4L << 20).minFreeBytes(0)
        .syncPolicy(SyncPolicy.NONE);
  }

  private static void putAll(DiskTier tier, int from, int to, long version) {
    for (int i = from; i < to; i++) {
      BlockKey key = Payloads.key(i);
      assertThat(tier.put(key, Payloads.of(key, version, BLOCK + i))).isEqualTo(PutStatus.STORED);
    }
  }

  /**
   * Copies the directory of an open tier: what a crash of the process at this moment would leave
   * (every put that returned is in the operating system's page cache, which the copy reads). A
   * file the tier deletes while it is copied (a dropped super-block) is left out, as a crash just
   * after its deletion would.
   */
  static Path crashImage(Path dir, Path image) throws IOException {
    Files.createDirectories(image);
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        if (!f.getFileName().toString().equals("lock")) {
          try {
            Files.copy(f, image.resolve(f.getFileName()));
          } catch (NoSuchFileException deletedMeanwhile) {
            Files.deleteIfExists(image.resolve(f.getFileName()));
          }
        }
      }
    }
    return image;
  }

  @Test
  void blocksSurviveACleanRestart() throws IOException {
    Path dir = temp.resolve("d");
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      putAll(tier, 0, 40, 1);
      putAll(tier, 0, 10, 2);
      assertThat(tier.delete(Payloads.key(20))).isTrue();
    }
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      assertHolds(tier, 0, 10, 2, BLOCK + 10);
      assertHolds(tier, 10, 20, 1, BLOCK + 20);
      assertThat(tier.contains(Payloads.key(20))).as("deleted before the restart").isFalse();
      assertHolds(tier, 21, 40, 1, BLOCK + 40);
      assertThat(tier.stats().blocks()).isEqualTo(39);
    }
  }

  @Test
  void blocksSurviveACrashThroughTheJournal() throws IOException {
    Path dir = temp.resolve("d");
    Path image;
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      putAll(tier, 0, 30, 1);
      putAll(tier, 5, 10, 3);
      tier.delete(Payloads.key(12));
      image = crashImage(dir, temp.resolve("image"));
    }
    try (DiskTier tier = DiskTier.open(config(image).build())) {
      assertHolds(tier, 0, 5, 1, BLOCK + 5);
      assertHolds(tier, 5, 10, 3, BLOCK + 10);
      assertThat(tier.contains(Payloads.key(12))).isFalse();
      assertHolds(tier, 13, 30, 1, BLOCK + 30);
    }
  }

  @Test
  void aTornJournalTailIsCutNotFatal() throws IOException {
    Path dir = temp.resolve("d");
    Path image;
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      putAll(tier, 0, 20, 1);
      image = crashImage(dir, temp.resolve("image"));
    }
    Path journal;
    try (Stream<Path> files = Files.list(image)) {
      journal = files.filter(f -> f.toString().endsWith(".kvj")).findFirst().orElseThrow();
    }
    // half an entry of garbage after the last good one, as a crash mid-append leaves
    try (FileChannel ch = FileChannel.open(journal, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
      ch.write(ByteBuffer.wrap(new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}));
    }
    try (DiskTier tier = DiskTier.open(config(image).build())) {
      assertHolds(tier, 0, 20, 1, BLOCK + 20);
    }
  }

  @Test
  void withoutCheckpointOrJournalTheIndexIsRebuiltFromTheRecords() throws IOException {
    Path dir = temp.resolve("d");
    Path image;
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      putAll(tier, 0, 30, 1);
      putAll(tier, 0, 5, 2);
      tier.delete(Payloads.key(7));
      image = crashImage(dir, temp.resolve("image"));
    }
    deleteJournalsAndCheckpoint(image);
    try (DiskTier tier = DiskTier.open(config(image).build())) {
      assertHolds(tier, 0, 5, 2, BLOCK + 5);
      assertHolds(tier, 5, 7, 1, BLOCK + 7);
      assertThat(tier.contains(Payloads.key(7))).as("its tombstone record survives").isFalse();
      assertHolds(tier, 8, 30, 1, BLOCK + 30);
      assertThat(tier.stats().blocks()).isEqualTo(29);
    }
  }

  /** Leaves only the super-blocks, so that the next open rebuilds the index from their records. */
  private static void deleteJournalsAndCheckpoint(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        String name = f.getFileName().toString();
        if (name.endsWith(".kvj") || name.startsWith("index.kvx")) {
          Files.delete(f);
        }
      }
    }
  }

  @Test
  void aDamagedRecordIsAMissNeverWrongBytes() throws IOException {
    Path dir = temp.resolve("d");
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      putAll(tier, 0, 3, 1);
    }
    // flip one byte in the middle of the payload of the block with the longest length (key 2)
    Path sb = DiskFiles.superBlocks(dir).get(0);
    long at = findPayloadOf(sb, Payloads.key(2)) + 1000;
    try (FileChannel ch = FileChannel.open(sb, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      ByteBuffer b = ByteBuffer.allocate(1);
      ch.read(b, at);
      b.put(0, (byte) ~b.get(0)).rewind();
      ch.write(b, at);
    }
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      assertThat(tier.getInto(Payloads.key(2), ByteBuffer.allocate(BLOCK + 2))).isEqualTo(GetStatus.MISS);
      try (BlockLease lease = tier.get(Payloads.key(2))) {
        assertThat(lease.status()).isEqualTo(GetStatus.MISS);
      }
      assertThat(tier.diskStats().corruptBlocks()).isEqualTo(1);
      assertThat(tier.contains(Payloads.key(2))).as("dropped").isFalse();
      assertHolds(tier, 0, 2, 1, BLOCK + 2);
    }
  }

  /** The payload offset of {@code key}'s record, found by its header's key fields. */
  private static long findPayloadOf(Path sb, BlockKey key) throws IOException {
    ByteBuffer all = ByteBuffer.wrap(Files.readAllBytes(sb)).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    for (int at = 4096; at + 64 <= all.capacity(); at += 64) {
      if (all.getInt(at) == 0x6272766b && all.getLong(at + 16) == key.hi() && all.getLong(at + 24) == key.lo()) {
        return at + 64;
      }
    }
    throw new AssertionError("no record of " + key);
  }

  @Test
  void aSecondOpenerOfTheDirectoryGetsAClearError() throws IOException {
    Path dir = temp.resolve("d");
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      assertThatThrownBy(() -> DiskTier.open(config(dir).build()))
          .isInstanceOf(DirectoryLockedException.class)
          .hasMessageContaining("already in use");
      putAll(tier, 0, 2, 1);
    }
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      assertHolds(tier, 0, 2, 1, BLOCK + 2);
    }
  }

  @Test
  void filesNeverExceedTheCapacityAndTheOldestBlocksGoFirst() throws IOException {
    Path dir = temp.resolve("d");
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      for (int i = 0; i < 2000; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
        assertThat(directoryBytes(dir)).isLessThanOrEqualTo(64L << 20);
      }
      assertThat(tier.stats().evictions()).isPositive();
      assertThat(tier.contains(Payloads.key(0))).isFalse();
      assertHolds(tier, 1990, 2000, 1, BLOCK + 2000);
    }
  }

  @Test
  void blocksReadSinceWrittenAreMovedForwardWhenTheirSuperBlockIsReclaimed() throws Exception {
    Path dir = temp.resolve("d");
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      putAll(tier, 0, 40, 1);
      for (int i = 0; i < 10; i++) {
        tier.get(Payloads.key(i)).close(); // read once: worth keeping
      }
      // about one pass over the capacity: the first super-block is reclaimed, the blocks moved
      // forward from it are not reached again (they would need another read to survive that)
      for (int i = 1000; i < 2000; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
        if (i % 16 == 0) {
          Thread.sleep(3); // let the background reclaimer keep ahead of the writer
        }
      }
      assertHolds(tier, 0, 10, 1, BLOCK + 10);
      assertThat(tier.contains(Payloads.key(20))).as("never read: dropped").isFalse();
      assertThat(tier.stats().compactions()).as("blocks rewritten").isGreaterThanOrEqualTo(10);
    }
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      assertHolds(tier, 0, 10, 1, BLOCK + 10);
    }
  }

  @Test
  void aSuperBlockMostlyOverwrittenIsCompacted() throws Exception {
    Path dir = temp.resolve("d");
    // through the page cache, records of 17 pages: the first super-block holds blocks 0 to 59,
    // block 60 starts the next (written directly, each record takes a page more)
    try (DiskTier tier = DiskTier.open(config(dir).directWrites(false).build())) {
      putAll(tier, 0, 61, 1);
      putAll(tier, 0, 56, 2); // leaves 4 of its 60 blocks live
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (tier.diskStats().superBlocksDropped() < 1 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertThat(tier.diskStats().superBlocksDropped()).isEqualTo(1);
      assertThat(tier.stats().compactions()).as("live blocks rewritten").isGreaterThanOrEqualTo(4);
      assertHolds(tier, 0, 56, 2, BLOCK + 56);
      assertHolds(tier, 56, 61, 1, BLOCK + 61);
      assertThat(tier.stats().evictions()).isZero();
    }
  }

  @Test
  void aDeleteSurvivesTheCompactionOfItsTombstoneOnARebuildFromTheRecords() throws Exception {
    Path dir = temp.resolve("d");
    Path image;
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      // 60 records fill a super-block: blocks 0-59 in the first, block 60 starts the second
      putAll(tier, 0, 61, 1);
      assertThat(tier.delete(Payloads.key(0))).isTrue(); // its tombstone goes to the second
      putAll(tier, 61, 125, 1); // fills the second, starts the third
      putAll(tier, 60, 116, 2); // leaves the second with a few live blocks: it is compacted
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (tier.diskStats().superBlocksDropped() < 1 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertThat(tier.diskStats().superBlocksDropped()).isEqualTo(1);
      assertThat(tier.stats().evictions()).as("the first super-block, with block 0, is kept").isZero();
      image = crashImage(dir, temp.resolve("image"));
    }
    deleteJournalsAndCheckpoint(image);
    try (DiskTier tier = DiskTier.open(config(image).build())) {
      assertThat(tier.contains(Payloads.key(0)))
          .as("deleted, though its record is still in the first super-block").isFalse();
      assertHolds(tier, 1, 60, 1, BLOCK + 60);
      assertHolds(tier, 60, 116, 2, BLOCK + 116);
      assertHolds(tier, 116, 125, 1, BLOCK + 125);
    }
  }

  private static long directoryBytes(Path dir) throws IOException {
    long total = 0;
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        try {
          total += Files.size(f);
        } catch (java.nio.file.NoSuchFileException e) {
          // deleted by the reclaimer since it was listed
        }
      }
    }
    return total;
  }

  @Test
  void anUnchangedBlockIsNotWrittenAgain() throws IOException {
    try (DiskTier tier = DiskTier.open(config(temp.resolve("d")).build())) {
      BlockKey key = Payloads.key(1);
      tier.put(key, Payloads.of(key, 1, BLOCK));
      long written = tier.diskStats().bytesWritten();
      assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
      assertThat(tier.diskStats().bytesWritten()).isEqualTo(written);
      assertThat(tier.diskStats().unchangedPuts()).isEqualTo(1);
      tier.put(key, Payloads.of(key, 2, BLOCK));
      assertThat(tier.diskStats().bytesWritten()).isGreaterThan(written);
      assertHolds(tier, 1, 2, 2, BLOCK + 2);
    }
  }

  @Test
  void blocksCanBeStoredEncodedWithTheCodec() throws IOException {
    Path dir = temp.resolve("d");
    BlockCodec codec = BlockCodec.builder().filter(Filter.BYTE_SHUFFLE_2).chunkSizeBytes(16 << 10).build();
    ByteBuffer zeros = ByteBuffer.allocateDirect(BLOCK);
    try (DiskTier tier = DiskTier.open(config(dir).codec(codec).build())) {
      putAll(tier, 0, 10, 1);
      tier.put(Payloads.key(99), zeros);
      try (BlockLease lease = tier.get(Payloads.key(3))) {
        assertThat(Payloads.verify(Payloads.key(3), lease.bytes())).isEqualTo(1);
      }
    }
    try (DiskTier tier = DiskTier.open(config(dir).codec(codec).build())) {
      assertHolds(tier, 0, 10, 1, BLOCK + 10);
      ByteBuffer dst = ByteBuffer.allocate(BLOCK);
      assertThat(tier.getInto(Payloads.key(99), dst)).isEqualTo(GetStatus.HIT);
      assertThat(dst.flip()).isEqualTo(zeros);
    }
  }

  @Test
  void everyPolicyKeepsWhatPutAcknowledged() throws IOException {
    for (SyncPolicy policy : SyncPolicy.values()) {
      Path dir = temp.resolve(policy.name());
      try (DiskTier tier = DiskTier.open(config(dir).syncPolicy(policy).syncIntervalMillis(5).build())) {
        putAll(tier, 0, 10, 1);
        tier.sync();
      }
      try (DiskTier tier = DiskTier.open(config(dir).build())) {
        assertHolds(tier, 0, 10, 1, BLOCK + 10);
      }
    }
  }

  @Test
  void withSeenBeforeAdmissionABlockIsWrittenOnItsSecondPut() throws IOException {
    try (DiskTier tier = DiskTier.open(config(temp.resolve("d")).admission(Admission.SEEN_BEFORE).build())) {
      BlockKey key = Payloads.key(1);
      assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.NOT_ADMITTED);
      assertThat(tier.contains(key)).isFalse();
      long written = tier.diskStats().bytesWritten();
      assertThat(written).as("nothing reached the disk").isZero();
      assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
      assertThat(tier.put(key, Payloads.of(key, 2, BLOCK))).as("a stored key is always written")
          .isEqualTo(PutStatus.STORED);
      assertHolds(tier, 1, 2, 2, BLOCK + 2);
      int admitted = 0;
      for (int i = 100; i < 1100; i++) {
        BlockKey k = Payloads.key(i);
        if (tier.put(k, Payloads.of(k, 1, 1000)) == PutStatus.STORED) {
          admitted++;
        }
      }
      assertThat(admitted).as("new keys let through by false positives").isLessThan(60);
    }
  }

  @Test
  void settingsOutOfRangeAreNamed() {
    Path dir = temp.resolve("d");
    assertThatThrownBy(() -> DiskTierConfig.builder(dir, 1L << 20).superBlockBytes(1L << 20).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("capacityBytes");
    assertThatThrownBy(() -> DiskTierConfig.builder(dir, 64L << 20).superBlockBytes(4L << 20)
            .maxBlockBytes(5 << 20).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxBlockBytes");
    assertThatThrownBy(() -> DiskTierConfig.builder(dir, 64L << 20).superBlockBytes(5000).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("superBlockBytes");
  }

  @Test
  void aBlockLargerThanTheLimitIsRejectedWithAStatus() throws IOException {
    try (DiskTier tier = DiskTier.open(config(temp.resolve("d")).maxBlockBytes(BLOCK).build())) {
      assertThat(tier.put(Payloads.key(1), ByteBuffer.allocateDirect(BLOCK + 1)))
          .isEqualTo(PutStatus.REJECTED_TOO_LARGE);
      assertThat(tier.stats().rejections()).isEqualTo(1);
    }
  }
}
