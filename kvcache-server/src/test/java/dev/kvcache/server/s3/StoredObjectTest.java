package dev.kvcache.server.s3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.s3api.body.ChecksumAlgorithm;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * An object's record reads back as it was written, after the object's bytes in its block: empty
 * texts apart from absent ones, any characters, a checksum or none; a block that does not end in
 * a record, or whose record does not fit it, is refused.
 */
class StoredObjectTest {

  private static final Instant TIME = Instant.parse("2026-11-30T12:00:00.123Z");

  @Test
  void aRecordReadsBackAfterTheObjectsBytes() {
    StoredObject full = new StoredObject("dir/ключ@1.bin", 5, 0x12345678, TIME,
        ChecksumAlgorithm.SHA256, "n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=",
        Map.of("content-type", "text/plain", "x-amz-meta-empty", "", "x-amz-meta-name", "välue"));
    StoredObject bare = new StoredObject("k", 0, 0, TIME, null, null, Map.of());
    for (StoredObject o : new StoredObject[] {full, bare}) {
      byte[] record = o.encode();
      assertThat(record.length).isEqualTo(StoredObject.recordBytes(o.key(),
          o.checksumAlgorithm(), o.headers()));
      ByteBuffer block = ByteBuffer.allocate((int) o.length() + record.length);
      block.position((int) o.length()).put(record).flip();
      assertThat(StoredObject.decode(block)).isEqualTo(o);
    }
  }

  @Test
  void aBlockWithoutARecordOrWithOneThatDoesNotFitIsRefused() {
    assertThatThrownBy(() -> StoredObject.decode(ByteBuffer.wrap(new byte[100])))
        .isInstanceOf(IllegalArgumentException.class);
    byte[] record = new StoredObject("k", 3, 1, TIME, null, null, Map.of()).encode();
    ByteBuffer shorter = ByteBuffer.allocate(2 + record.length).position(2).put(record).flip();
    assertThatThrownBy(() -> StoredObject.decode(shorter))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("does not fit");
    ByteBuffer cut = ByteBuffer.wrap(record, 1, record.length - 1).slice();
    assertThatThrownBy(() -> StoredObject.decode(cut)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void etagsMatchQuotedOrNotInListsAndStars() {
    String etag = StoredObject.etag(0xabc, 10);
    assertThat(etag).isEqualTo("\"00000abca\"");
    assertThat(StoredObject.matches(etag, etag)).isTrue();
    assertThat(StoredObject.matches("00000abca", etag)).isTrue();
    assertThat(StoredObject.matches("\"x\", W/\"00000abca\"", etag)).isTrue();
    assertThat(StoredObject.matches("*", etag)).isTrue();
    assertThat(StoredObject.matches("\"00000abcb\"", etag)).isFalse();
  }
}
