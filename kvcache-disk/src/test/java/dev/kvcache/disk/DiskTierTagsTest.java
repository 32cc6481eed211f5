package dev.kvcache.disk;

import static dev.kvcache.testkit.TestBytes.indexOf;
import static dev.kvcache.testkit.TierAssertions.assertHolds;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockWriter;
import dev.kvcache.PutStatus;
import dev.kvcache.disk.tool.DiskToolTest;
import dev.kvcache.spi.BlockTags;
import dev.kvcache.testkit.Payloads;
import dev.kvcache.testkit.RecordingTags;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tags kept with blocks ({@link BlockTags}): what the listener named a block by as the tier wrote
 * it comes back when the tier opens again, after a clean close, a crash and a compaction, and a
 * damaged tag is dropped without the block.
 */
class DiskTierTagsTest {

  private static final int BLOCK = 64 << 10;

  @TempDir Path temp;

  private DiskTierConfig.Builder config(Path dir) {
    return DiskTierConfig.builder(dir, 64L << 20).superBlockBytes(4L << 20).minFreeBytes(0)
        .syncPolicy(SyncPolicy.NONE);
  }

  private static String name(int i) {
    return "engine block " + i;
  }

  /** Puts blocks {@code from} to {@code to}, the even ones named. */
  private static void putNamed(DiskTier tier, RecordingTags tags, int from, int to,
      long version) {
    for (int i = from; i < to; i++) {
      BlockKey key = Payloads.key(i);
      if (i % 2 == 0) {
        tags.give(key, name(i));
      }
      assertThat(tier.put(key, Payloads.of(key, version, BLOCK + i))).isEqualTo(PutStatus.STORED);
    }
  }

  private static Map<BlockKey, String> named(int from, int to) {
    Map<BlockKey, String> named = new ConcurrentHashMap<>();
    for (int i = from; i < to; i += 1) {
      if (i % 2 == 0) {
        named.put(Payloads.key(i), name(i));
      }
    }
    return named;
  }

  /** The tags a tier opened on {@code dir} tells. */
  private Map<BlockKey, String> toldAtOpen(Path dir) throws Exception {
    RecordingTags tags = new RecordingTags();
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      tier.listen(tags);
      Map<BlockKey, String> told = tags.awaitAll();
      assertThat(tags.told()).allMatch(line -> line.startsWith("disk "));
      return told;
    }
  }

  @Test
  void theTagsComeBackAfterACleanCloseAndAfterACrash() throws Exception {
    Path dir = temp.resolve("d");
    RecordingTags tags = new RecordingTags();
    Path image;
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      tier.listen(tags);
      assertThat(tags.awaitAll()).as("a new tier holds nothing").isEmpty();
      putNamed(tier, tags, 0, 20, 1);
      // a block written by parts keeps its tag too
      BlockKey parts = Payloads.key(100);
      tags.give(parts, "written in parts");
      try (BlockWriter w = tier.writer(parts, BLOCK)) {
        ByteBuffer block = Payloads.of(parts, 1, BLOCK);
        w.write(block.slice(0, BLOCK / 2));
        w.write(block.slice(BLOCK / 2, BLOCK / 2));
        assertThat(w.commit()).isEqualTo(PutStatus.STORED);
      }
      image = DiskTierTest.crashImage(dir, temp.resolve("image"));
    }
    Map<BlockKey, String> expected = named(0, 20);
    expected.put(Payloads.key(100), "written in parts");
    assertThat(toldAtOpen(dir)).as("after a clean close").isEqualTo(expected);
    assertThat(toldAtOpen(image)).as("after a crash: from the journal").isEqualTo(expected);
    try (DiskTier tier = DiskTier.open(config(image).build())) {
      assertHolds(tier, 0, 20, 1, BLOCK + 20);
    }
  }

  @Test
  void aCompactedBlockKeepsItsTag() throws Exception {
    Path dir = temp.resolve("d");
    RecordingTags tags = new RecordingTags();
    // through the page cache, records of 17 pages: the first super-block holds blocks 0 to 59
    try (DiskTier tier = DiskTier.open(config(dir).directWrites(false).build())) {
      tier.listen(tags);
      putNamed(tier, tags, 0, 61, 1);
      tags.giveNone(); // the new versions have no tag
      for (int i = 0; i < 56; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(tier.put(key, Payloads.of(key, 2, BLOCK + i))).isEqualTo(PutStatus.STORED);
      }
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (tier.diskStats().superBlocksDropped() < 1 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertThat(tier.diskStats().superBlocksDropped()).isEqualTo(1);
      assertThat(tier.stats().compactions()).as("live blocks rewritten").isGreaterThanOrEqualTo(4);
    }
    assertThat(toldAtOpen(dir)).as("56 to 60 moved with their tags; 0 to 55 put again untagged")
        .isEqualTo(named(56, 61));
  }

  @Test
  void theSameBytesWithAnotherTagAreWrittenAgain() throws Exception {
    Path dir = temp.resolve("d");
    RecordingTags tags = new RecordingTags();
    BlockKey key = Payloads.key(1);
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      tier.listen(tags);
      tags.give(key, "first");
      assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
      assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
      assertThat(tier.diskStats().unchangedPuts()).as("same bytes, same tag").isEqualTo(1);
      tags.give(key, "second");
      assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
      assertThat(tier.diskStats().unchangedPuts()).as("another tag: written").isEqualTo(1);
    }
    assertThat(toldAtOpen(dir)).isEqualTo(Map.of(key, "second"));
  }

  @Test
  void aDamagedTagIsDroppedAndItsBlockStays() throws Exception {
    Path dir = temp.resolve("d");
    RecordingTags tags = new RecordingTags();
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      tier.listen(tags);
      putNamed(tier, tags, 0, 4, 1);
    }
    // one byte of the first tag in the files, past its magic, length and checksum
    int damaged = 0;
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".kvsb"))::iterator) {
        byte[] bytes = Files.readAllBytes(f);
        int at = indexOf(bytes, "kvtg".getBytes(StandardCharsets.US_ASCII));
        if (at >= 0 && damaged == 0) {
          try (FileChannel ch = FileChannel.open(f, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(new byte[] {(byte) (bytes[at + 14] ^ 0x20)}), at + 14);
          }
          damaged++;
        }
      }
    }
    assertThat(damaged).isEqualTo(1);
    DiskToolTest.Run verify = DiskToolTest.tool("verify", dir.toString());
    assertThat(verify.exit()).as("the blocks are intact: " + verify.out()).isZero();
    assertThat(verify.out()).contains("tags: 2 intact blocks have one, 1 of them damaged");
    Map<BlockKey, String> told = toldAtOpen(dir);
    assertThat(told).as("one tag lost, none told wrong").hasSize(1);
    assertThat(named(0, 4)).containsAllEntriesOf(told);
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      assertHolds(tier, 0, 4, 1, BLOCK + 4);
    }
  }

  @Test
  void aTagLongerThanTheMostIsNotKeptAndBlocksWithoutOneAreNotTold() throws Exception {
    Path dir = temp.resolve("d");
    RecordingTags tags = new RecordingTags();
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      tier.listen(tags);
      tags.give(Payloads.key(0), new byte[BlockTags.MAX_TAG_BYTES + 1]);
      tags.give(Payloads.key(1), "x".repeat(BlockTags.MAX_TAG_BYTES));
      for (int i = 0; i < 3; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(tier.put(key, Payloads.of(key, 1, BLOCK + i))).isEqualTo(PutStatus.STORED);
      }
    }
    assertThat(toldAtOpen(dir)).containsOnlyKeys(Payloads.key(1));
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      assertHolds(tier, 0, 3, 1, BLOCK + 3);
    }
  }
}
