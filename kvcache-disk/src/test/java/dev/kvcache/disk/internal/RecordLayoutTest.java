package dev.kvcache.disk.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

/** Pins the record header and the placement rule to what docs/disk-format.md says. */
class RecordLayoutTest {

  @Test
  void aRecordHeaderHasTheDocumentedBytes() {
    BlockKey key = BlockKey.of(0x0102030405060708L, 0x1112131415161718L);
    ByteBuffer h = Records.header(RecordLayout.KIND_BLOCK, RecordLayout.ENCODING_CONTAINER, 77, key,
        1000, 900, 0xcafebabe, 0).order(ByteOrder.LITTLE_ENDIAN);
    assertThat(h.capacity()).isEqualTo(64);
    byte[] magic = new byte[4];
    h.get(0, magic);
    assertThat(new String(magic, java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("kvrb");
    assertThat(h.get(4)).isEqualTo((byte) 1);
    assertThat(h.get(5)).isEqualTo((byte) 0);
    assertThat(h.get(6)).isEqualTo((byte) 1);
    assertThat(h.get(7)).isEqualTo((byte) 0);
    assertThat(h.getLong(8)).isEqualTo(77);
    assertThat(h.getLong(16)).isEqualTo(0x0102030405060708L);
    assertThat(h.getLong(24)).isEqualTo(0x1112131415161718L);
    assertThat(h.getInt(32)).isEqualTo(1000);
    assertThat(h.getInt(36)).isEqualTo(900);
    assertThat(h.getInt(40)).isEqualTo(0xcafebabe);
    assertThat(h.getInt(44)).isZero();
    assertThat(h.getInt(56)).isZero();
    CRC32C crc = new CRC32C();
    crc.update(h.duplicate().position(0).limit(60));
    assertThat(h.getInt(60)).isEqualTo((int) crc.getValue());
  }

  @Test
  void smallRecordsStayWithinOnePageAndLargePayloadsStartOnOne() {
    // a small record fitting in the rest of the page goes at the next 64-byte boundary
    assertThat(RecordLayout.payloadOffset(4096, 100)).isEqualTo(4096 + 64);
    assertThat(RecordLayout.payloadOffset(4097, 100)).isEqualTo(4096 + 64 + 64);
    // one that would cross the page boundary moves to the next page
    assertThat(RecordLayout.payloadOffset(8192 - 128, 100)).isEqualTo(8192 + 64);
    // exactly filling the page is fine
    assertThat(RecordLayout.payloadOffset(8192 - 128, 64)).isEqualTo(8192 - 64);
    // a payload larger than a page minus the header starts on a page boundary
    assertThat(RecordLayout.payloadOffset(4096, 4096 - 63)).isEqualTo(8192);
    assertThat(RecordLayout.payloadOffset(5000, 1 << 20)).isEqualTo(8192);
    assertThat(RecordLayout.payloadOffset(8192 - 64, 1 << 20)).isEqualTo(8192);
    assertThat(RecordLayout.payloadOffset(8192 - 63, 1 << 20)).isEqualTo(12288);
  }

  @Test
  void aJournalEntryHasTheDocumentedBytesAndReadsBack() {
    BlockKey key = BlockKey.of(5, 6);
    Location loc = new Location(3, 8192, 1000, 2000, 0x12345678, 1, 99, 0);
    ByteBuffer e = JournalEntry.put(key, loc, 7).order(ByteOrder.LITTLE_ENDIAN);
    assertThat(e.capacity()).isEqualTo(64);
    assertThat(e.get(0)).isEqualTo((byte) 1);
    assertThat(e.get(1)).isEqualTo((byte) 1);
    assertThat(e.getInt(4)).isEqualTo(3);
    assertThat(e.getLong(8)).isEqualTo(99);
    assertThat(e.getLong(16)).isEqualTo(5);
    assertThat(e.getLong(24)).isEqualTo(6);
    assertThat(e.getInt(32)).isEqualTo(8192);
    assertThat(e.getInt(36)).isEqualTo(1000);
    assertThat(e.getInt(40)).isEqualTo(2000);
    assertThat(e.getInt(44)).isEqualTo(0x12345678);
    assertThat(e.getInt(48)).isEqualTo(7);

    JournalEntry back = JournalEntry.read(e, 0);
    assertThat(back.type).isEqualTo(JournalLayout.TYPE_PUT);
    assertThat(back.key).isEqualTo(key);
    assertThat(back.location.payloadOffset).isEqualTo(8192);
    assertThat(back.location.hits()).isEqualTo(7);

    e.put(20, (byte) 1);
    assertThat(JournalEntry.read(e, 0)).as("a damaged entry").isNull();
  }

  @Test
  void aPutsFlagAndASyncEntryHaveTheDocumentedBytes() {
    Location loc = new Location(3, 8192, 1000, 2000, 0x12345678, 1, 99, 0);
    ByteBuffer flagged = JournalEntry.put(BlockKey.of(5, 6), loc, 0, true)
        .order(ByteOrder.LITTLE_ENDIAN);
    assertThat(flagged.getShort(2)).isEqualTo((short) 1);
    assertThat(JournalEntry.read(flagged, 0).recordDurable).isTrue();
    assertThat(JournalEntry.read(JournalEntry.put(BlockKey.of(5, 6), loc, 0), 0).recordDurable)
        .isFalse();

    ByteBuffer sync = JournalEntry.sync(4160).order(ByteOrder.LITTLE_ENDIAN);
    assertThat(sync.get(0)).isEqualTo((byte) 4);
    assertThat(sync.getLong(8)).isEqualTo(4160);
    JournalEntry back = JournalEntry.read(sync, 0);
    assertThat(back.type).isEqualTo(JournalLayout.TYPE_SYNC);
    assertThat(back.sequence).isEqualTo(4160);
    assertThat(JournalLayout.JOURNAL_VERSION).isEqualTo(2);
    assertThat(JournalLayout.CHECKPOINT_VERSION).isEqualTo(1);
  }
}
