package dev.kvcache.disk.internal;

import static dev.kvcache.disk.internal.JournalLayout.*;
import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.kvcache.BlockKey;
import dev.kvcache.disk.device.FileSystemDevice;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Fuzzes the decoders of the disk tier's metadata, the journal and the checkpoint, with Jazzer.
 * In a normal test run this replays the seeds under {@code
 * src/test/resources/dev/kvcache/disk/internal/MetadataFuzzTestInputs/}; to fuzz, as {@code
 * .ci/run} does for 30 seconds each:
 *
 * <pre>
 * JAZZER_FUZZ=1 ./mvnw -pl kvcache-disk test -Dtest='MetadataFuzzTest#journalReplayKeepsTheValidPrefix'
 * JAZZER_FUZZ=1 ./mvnw -pl kvcache-disk test -Dtest='MetadataFuzzTest#checkpointIsWholeOrNothing'
 * </pre>
 *
 * <p>Random bytes almost never pass a CRC32C, so each input is shaped like the file it fuzzes:
 * entries of fuzzed bytes that the input chooses to seal with a valid checksum or not, so that the
 * decoders' handling of well-checksummed but meaningless values is reached too.
 */
@Tag("fuzz")
class MetadataFuzzTest {

  private static Path dir;

  @BeforeAll
  static void makeDir() throws IOException {
    dir = Files.createTempDirectory("kvcache-metadata-fuzz");
  }

  @AfterAll
  static void removeDir() throws IOException {
    try (var files = Files.list(dir)) {
      for (Path f : files.toList()) {
        Files.delete(f);
      }
    }
    Files.delete(dir);
  }

  /** 64 fuzzed bytes, sealed with their CRC32C if the input says so. */
  private static ByteBuffer entry(FuzzedDataProvider data) {
    ByteBuffer e = ByteBuffer.allocate(ENTRY_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    e.put(data.consumeBytes(ENTRY_BYTES)).clear();
    if (data.consumeBoolean()) {
      e.put(TYPE_OFFSET, (byte) data.consumeInt(0, 5));
      e.putInt(CRC_OFFSET, SuperBlock.crc(e, 0, CRC_OFFSET));
    }
    return e;
  }

  private static boolean valid(ByteBuffer e) {
    int type = e.get(TYPE_OFFSET);
    return e.getInt(CRC_OFFSET) == SuperBlock.crc(e, 0, CRC_OFFSET)
        && (type == TYPE_PUT || type == TYPE_DELETE || type == TYPE_DROP || type == TYPE_SYNC);
  }

  /**
   * A journal of a valid header (or, now and then, a fuzzed one) and fuzzed entries, perhaps cut
   * short: replay hands over exactly the leading valid entries, in order, cuts the file after them,
   * and throws nothing.
   */
  @FuzzTest(maxDuration = "30s")
  void journalReplayKeepsTheValidPrefix(FuzzedDataProvider data) throws IOException {
    long generation = 7;
    boolean goodHeader = data.consumeInt(0, 15) != 0;
    ByteBuffer header = ByteBuffer.allocate(FILE_HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    if (goodHeader) {
      header.putInt(MAGIC_OFFSET, JOURNAL_MAGIC).put(VERSION_OFFSET, (byte) JOURNAL_VERSION)
          .putLong(GENERATION_OFFSET, generation);
      header.putInt(CRC_OFFSET, SuperBlock.crc(header, 0, CRC_OFFSET));
    } else {
      header.put(data.consumeBytes(FILE_HEADER_BYTES)).clear();
    }
    List<ByteBuffer> entries = new ArrayList<>();
    int n = data.consumeInt(0, 12);
    for (int i = 0; i < n; i++) {
      entries.add(entry(data));
    }
    int torn = data.consumeInt(0, ENTRY_BYTES - 1); // bytes of a last entry cut short
    ByteBuffer file = ByteBuffer.allocate(FILE_HEADER_BYTES + n * ENTRY_BYTES + torn);
    file.put(header.clear());
    entries.forEach(e -> file.put(e.clear()));
    file.put(data.consumeBytes(torn));
    Path path = dir.resolve(Journal.fileName(generation));
    Files.write(path, file.array());

    List<JournalEntry> handed = new ArrayList<>();
    long count = Journal.replay(FileSystemDevice.INSTANCE, path, generation, true,
        (e, confirmed) -> handed.add(e));

    boolean headerValid = header.getInt(MAGIC_OFFSET) == JOURNAL_MAGIC
        && header.getInt(CRC_OFFSET) == SuperBlock.crc(header, 0, CRC_OFFSET)
        && header.get(VERSION_OFFSET) == JOURNAL_VERSION
        && header.getLong(GENERATION_OFFSET) == generation;
    if (!headerValid) {
      assertThat(count).isEqualTo(-1);
      assertThat(handed).isEmpty();
      return;
    }
    int prefix = 0;
    while (prefix < n && valid(entries.get(prefix))) {
      prefix++;
    }
    assertThat(count).isEqualTo(prefix);
    assertThat(handed).hasSize(prefix);
    for (int i = 0; i < prefix; i++) {
      ByteBuffer e = entries.get(i);
      JournalEntry got = handed.get(i);
      assertThat(got.type).isEqualTo(e.get(TYPE_OFFSET));
      assertThat(got.key).isEqualTo(BlockKey.of(e.getLong(KEY_HI_OFFSET), e.getLong(KEY_LO_OFFSET)));
      assertThat(got.sequence).isEqualTo(e.getLong(SEQUENCE_OFFSET));
    }
    assertThat(Files.size(path)).as("cut after the valid entries")
        .isEqualTo(FILE_HEADER_BYTES + (long) prefix * ENTRY_BYTES);
  }

  @Test
  void aCheckpointHoldingAnEntryOtherThanAPutIsRefusedWhole() throws IOException {
    BlockKey first = BlockKey.of(1, 2);
    ByteBuffer put = JournalEntry.put(first, new Location(1, 4096, 100, 100, 7, 0, 1, 0), 0);
    ByteBuffer delete = JournalEntry.delete(BlockKey.of(3, 4), 2);
    ByteBuffer file = ByteBuffer.allocate(FILE_HEADER_BYTES + 3 * ENTRY_BYTES)
        .order(ByteOrder.LITTLE_ENDIAN);
    file.putInt(MAGIC_OFFSET, CHECKPOINT_MAGIC).put(VERSION_OFFSET, (byte) CHECKPOINT_VERSION)
        .putLong(GENERATION_OFFSET, 2).putLong(ENTRY_COUNT_OFFSET, 2);
    file.putInt(CRC_OFFSET, SuperBlock.crc(file, 0, CRC_OFFSET));
    file.put(FILE_HEADER_BYTES, put, 0, ENTRY_BYTES)
        .put(FILE_HEADER_BYTES + ENTRY_BYTES, delete, 0, ENTRY_BYTES);
    int trailer = FILE_HEADER_BYTES + 2 * ENTRY_BYTES;
    java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
    crc.update(file.duplicate().position(FILE_HEADER_BYTES).limit(trailer));
    file.putInt(trailer + MAGIC_OFFSET, TRAILER_MAGIC)
        .putInt(trailer + ENTRIES_CRC_OFFSET, (int) crc.getValue());
    file.putInt(trailer + CRC_OFFSET, SuperBlock.crc(file, trailer, CRC_OFFSET));
    Files.write(dir.resolve(Checkpoint.FILE_NAME), file.array());
    List<BlockKey> handed = new ArrayList<>();
    assertThat(Checkpoint.read(FileSystemDevice.INSTANCE, dir, (key, loc) -> handed.add(key))).isNull();
    assertThat(handed).as("not even the put before it").isEmpty();
  }

  /**
   * A checkpoint of fuzzed entries under a header and trailer that are valid or, now and then,
   * fuzzed: read hands over every entry and answers its header, or hands over nothing and answers
   * null; it throws nothing.
   */
  @FuzzTest(maxDuration = "30s")
  void checkpointIsWholeOrNothing(FuzzedDataProvider data) throws IOException {
    int n = data.consumeInt(0, 8);
    List<ByteBuffer> entries = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      entries.add(entry(data));
    }
    ByteBuffer file = ByteBuffer.allocate(FILE_HEADER_BYTES + (n + 1) * ENTRY_BYTES)
        .order(ByteOrder.LITTLE_ENDIAN);
    file.putInt(MAGIC_OFFSET, CHECKPOINT_MAGIC).put(VERSION_OFFSET, (byte) CHECKPOINT_VERSION)
        .putLong(GENERATION_OFFSET, data.consumeLong()).putLong(MAX_SEQUENCE_OFFSET, data.consumeLong())
        .putLong(ENTRY_COUNT_OFFSET, data.consumeInt(0, 15) == 0 ? data.consumeLong() : n);
    file.putInt(CRC_OFFSET, SuperBlock.crc(file, 0, CRC_OFFSET));
    for (int i = 0; i < n; i++) {
      file.put(FILE_HEADER_BYTES + i * ENTRY_BYTES, entries.get(i).clear(), 0, ENTRY_BYTES);
    }
    int trailer = FILE_HEADER_BYTES + n * ENTRY_BYTES;
    java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
    crc.update(file.duplicate().position(FILE_HEADER_BYTES).limit(trailer));
    file.putInt(trailer + MAGIC_OFFSET, TRAILER_MAGIC)
        .putInt(trailer + ENTRIES_CRC_OFFSET, (int) crc.getValue());
    file.putInt(trailer + CRC_OFFSET, SuperBlock.crc(file, trailer, CRC_OFFSET));
    byte[] bytes = file.array();
    int flips = data.consumeInt(0, 3); // damage anywhere: header, entries or trailer
    for (int i = 0; i < flips; i++) {
      bytes[data.consumeInt(0, bytes.length - 1)] ^= (byte) (1 << data.consumeInt(0, 7));
    }
    Files.write(dir.resolve(Checkpoint.FILE_NAME), bytes);

    List<BlockKey> handed = new ArrayList<>();
    Checkpoint.Header header = Checkpoint.read(FileSystemDevice.INSTANCE, dir, (key, loc) -> handed.add(key));
    if (header == null) {
      assertThat(handed).as("nothing of a checkpoint refused").isEmpty();
    } else {
      assertThat(handed).hasSize((int) header.entryCount);
      assertThat(header.entryCount).isEqualTo(n);
    }
  }
}
