package dev.kvcache.disk;

import static dev.kvcache.disk.internal.RecordLayout.ENCODING_RAW;
import static dev.kvcache.disk.internal.RecordLayout.HEADER_BYTES;
import static dev.kvcache.disk.internal.RecordLayout.KIND_BLOCK;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockWriter;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.codec.BlockCodec;
import dev.kvcache.disk.internal.Records;
import dev.kvcache.testkit.Payloads;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The disk tier's own writer: a block streamed in parts straight into its record. */
class DiskTierWriterTest {

  private static final int BLOCK = 600 << 10;
  private static final int PART = 16 << 10;

  @TempDir Path temp;

  /**
   * Writes through the page cache, where parts are gathered 256 KiB at a time; direct writes
   * gather 1 MiB at a time ({@link DirectWritesTest}).
   */
  private DiskTierConfig.Builder config(Path dir, boolean encoded) {
    DiskTierConfig.Builder b = DiskTierConfig.builder(dir, 64L << 20).superBlockBytes(4L << 20)
        .minFreeBytes(0).syncPolicy(SyncPolicy.NONE).directWrites(false);
    return encoded ? b.codec(BlockCodec.builder().chunkSizeBytes(16 << 10).build()) : b;
  }

  private static void writeParts(BlockWriter writer, ByteBuffer block, int from, int to) {
    for (int at = from; at < to; at += PART) {
      writer.write(block.duplicate().position(at).limit(Math.min(to, at + PART)));
    }
  }

  private static long version(DiskTier tier, BlockKey key) {
    ByteBuffer dst = ByteBuffer.allocate(BLOCK);
    assertThat(tier.getInto(key, dst)).isEqualTo(GetStatus.HIT);
    return Payloads.verify(key, dst.flip());
  }

  /** Whether any super-block file of {@code dir} holds {@code bytes}. */
  private static boolean filesHold(Path dir, ByteBuffer bytes) throws IOException {
    byte[] wanted = new byte[bytes.remaining()];
    bytes.duplicate().get(wanted);
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        if (f.toString().endsWith(".kvsb")) {
          byte[] content = Files.readAllBytes(f);
          for (int i = 0; i + wanted.length <= content.length; i += 64) {
            if (Arrays.equals(content, i, i + wanted.length, wanted, 0, wanted.length)) {
              return true;
            }
          }
        }
      }
    }
    return false;
  }

  @ParameterizedTest(name = "encoded: {0}")
  @ValueSource(booleans = {false, true})
  void partsReachTheirRecordBeforeTheCommitAndTheBlockSurvivesARestart(boolean encoded)
      throws IOException {
    Path dir = temp.resolve("d");
    BlockKey key = Payloads.key(1);
    ByteBuffer block = Payloads.of(key, 7, BLOCK);
    try (DiskTier tier = DiskTier.open(config(dir, encoded).build())) {
      try (BlockWriter writer = tier.writer(key, BLOCK)) {
        assertThat(writer.rejection()).isEmpty();
        writeParts(writer, block, 0, BLOCK / 2);
        // incompressible chunks are stored raw, so the first one shows in the file either way
        assertThat(filesHold(dir, block.duplicate().position(PART).limit(2 * PART)))
            .as("written in place, not gathered until the commit").isTrue();
        assertThat(tier.contains(key)).isFalse();
        writeParts(writer, block, BLOCK / 2, BLOCK);
        assertThat(writer.commit()).isEqualTo(PutStatus.STORED);
      }
      assertThat(version(tier, key)).isEqualTo(7);
      assertThat(tier.diskStats().bytesWritten()).isGreaterThan(BLOCK);
    }
    try (DiskTier tier = DiskTier.open(config(dir, encoded).build())) {
      assertThat(version(tier, key)).isEqualTo(7);
    }
  }

  @ParameterizedTest(name = "encoded: {0}")
  @ValueSource(booleans = {false, true})
  void anAbandonedBlockLeavesNothingAScanOfTheRecordsCouldFind(boolean encoded)
      throws IOException {
    Path dir = temp.resolve("d");
    BlockKey key = Payloads.key(1);
    BlockKey forged = Payloads.key(2);
    // a block holding a whole, intact record of another key, newer than anything stored, where a
    // scan looks for headers: 64-byte aligned in the file (raw bytes of an encoded block follow
    // the container's and the first chunk's headers, 48 bytes) and within one stored-raw chunk
    ByteBuffer record = Payloads.of(key, 1, BLOCK);
    ByteBuffer payload = Payloads.of(forged, 9, 8 << 10);
    record.position(encoded ? 16 : 0);
    record.put(Records.header(KIND_BLOCK, ENCODING_RAW, Long.MAX_VALUE / 2, forged,
        payload.remaining(), payload.remaining(), Records.crc(payload), 0));
    record.put(payload).clear();
    try (DiskTier tier = DiskTier.open(config(dir, encoded).build())) {
      tier.put(forged, Payloads.of(forged, 1, BLOCK));
      BlockWriter first = tier.writer(key, BLOCK);
      writeParts(first, record, 0, BLOCK - 1);
      assertThat(tier.put(Payloads.key(3), Payloads.of(Payloads.key(3), 1, BLOCK)))
          .as("a record after the open writer's").isEqualTo(PutStatus.STORED);
      first.close();
      BlockWriter last = tier.writer(key, BLOCK);
      writeParts(last, record, 0, BLOCK - 1);
      last.close();
      assertThat(tier.contains(key)).isFalse();
      assertThat(version(tier, forged)).isEqualTo(1);
    }
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        String name = f.getFileName().toString();
        if (name.endsWith(".kvj") || name.startsWith("index.kvx")) {
          Files.delete(f); // the next open rebuilds the index by scanning the records
        }
      }
    }
    try (DiskTier tier = DiskTier.open(config(dir, encoded).build())) {
      assertThat(tier.contains(key)).isFalse();
      assertThat(version(tier, forged)).as("the bytes of no abandoned block").isEqualTo(1);
      assertThat(version(tier, Payloads.key(3))).isEqualTo(1);
    }
  }

  @ParameterizedTest(name = "encoded: {0}")
  @ValueSource(booleans = {false, true})
  void aCommitReplacesAPutMadeWhileItsWriterWasOpen(boolean encoded) throws IOException {
    Path dir = temp.resolve("d");
    BlockKey key = Payloads.key(1);
    try (DiskTier tier = DiskTier.open(config(dir, encoded).build())) {
      try (BlockWriter writer = tier.writer(key, BLOCK)) {
        writeParts(writer, Payloads.of(key, 3, BLOCK), 0, BLOCK);
        assertThat(tier.put(key, Payloads.of(key, 2, BLOCK))).isEqualTo(PutStatus.STORED);
        assertThat(version(tier, key)).isEqualTo(2);
        assertThat(writer.commit()).isEqualTo(PutStatus.STORED);
      }
      assertThat(version(tier, key)).isEqualTo(3);
    }
    try (DiskTier tier = DiskTier.open(config(dir, encoded).build())) {
      assertThat(version(tier, key)).as("after a restart too").isEqualTo(3);
    }
  }

  @ParameterizedTest(name = "encoded: {0}")
  @ValueSource(booleans = {false, true})
  void aCommitAfterTheTierClosedFailsAndKeepsNothing(boolean encoded) throws IOException {
    Path dir = temp.resolve("d");
    BlockKey key = Payloads.key(1);
    DiskTier tier = DiskTier.open(config(dir, encoded).build());
    BlockWriter writer = tier.writer(key, BLOCK);
    writeParts(writer, Payloads.of(key, 1, BLOCK), 0, BLOCK);
    tier.close();
    assertThatThrownBy(writer::commit).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
    writer.close();
    try (DiskTier reopened = DiskTier.open(config(dir, encoded).build())) {
      assertThat(reopened.contains(key)).isFalse();
      assertThat(reopened.writer(key, BLOCK).rejection()).isEmpty();
    }
  }

  @ParameterizedTest(name = "encoded: {0}")
  @ValueSource(booleans = {false, true})
  void withSeenBeforeAdmissionTheFirstWriterKeepsNothing(boolean encoded) throws IOException {
    try (DiskTier tier = DiskTier.open(
        config(temp.resolve("d"), encoded).admission(Admission.SEEN_BEFORE).build())) {
      BlockKey key = Payloads.key(1);
      for (PutStatus expected : new PutStatus[] {PutStatus.NOT_ADMITTED, PutStatus.STORED}) {
        try (BlockWriter writer = tier.writer(key, BLOCK)) {
          writeParts(writer, Payloads.of(key, 5, BLOCK), 0, BLOCK);
          assertThat(writer.commit()).isEqualTo(expected);
        }
        if (expected == PutStatus.NOT_ADMITTED) {
          assertThat(tier.diskStats().bytesWritten()).as("nothing reached the disk").isZero();
        }
      }
      assertThat(version(tier, key)).isEqualTo(5);
    }
  }
}
