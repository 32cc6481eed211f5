package dev.kvcache.codec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

import dev.kvcache.codec.CorruptBlockException.Reason;
import dev.kvcache.testkit.TestBytes;
import java.io.ByteArrayInputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Damaged containers: each gets a {@link CorruptBlockException} naming the reason, the chunk and
 * the offset, and no decode of a damaged container ever reports success with bytes other than the
 * original.
 */
@Tag("corruption")
class CorruptInputTest {

  private static final int CHUNK = 16 << 10;
  private static final int SIZE = 3 * CHUNK + 500;
  private final ByteBuffer original = TestBytes.halfFloatsDirect(SIZE, 11);

  private byte[] encoded(Filter filter) {
    ByteBuffer e = BlockCodecTest.encode(BlockCodecTest.codec(filter), original);
    byte[] bytes = new byte[e.remaining()];
    e.get(bytes);
    return bytes;
  }

  private static void decode(byte[] bytes) throws Exception {
    BlockCodec.decode(ByteBuffer.wrap(bytes), ByteBuffer.allocate(SIZE));
  }

  private static CorruptBlockException corrupt(ThrowingCallable call) {
    try {
      call.call();
    } catch (CorruptBlockException e) {
      return e;
    } catch (Throwable t) {
      throw new AssertionError("expected CorruptBlockException, got " + t, t);
    }
    throw new AssertionError("expected CorruptBlockException, decoding succeeded");
  }

  /** Rewrites the header checksum so that a header field change gets past it. */
  private static void resealHeader(byte[] bytes) {
    CRC32C crc = new CRC32C();
    crc.update(bytes, 0, 28);
    ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putInt(28, (int) crc.getValue());
  }

  @Test
  void wrongMagic() {
    byte[] bytes = encoded(Filter.NONE);
    bytes[0] = 'x';
    CorruptBlockException e = corrupt(() -> decode(bytes));
    assertThat(e.reason()).isEqualTo(Reason.BAD_MAGIC);
    assertThat(e.chunkIndex()).isEqualTo(-1);
    assertThat(e).hasMessageContaining("magic");
  }

  @Test
  void unknownVersionIsRefusedNamingIt() {
    byte[] bytes = encoded(Filter.NONE);
    bytes[4] = 2;
    CorruptBlockException e = corrupt(() -> decode(bytes));
    assertThat(e.reason()).isEqualTo(Reason.UNSUPPORTED_VERSION);
    assertThat(e).hasMessageContaining("version 2").hasMessageContaining("newer");
  }

  @Test
  void damagedHeaderFailsItsChecksum() {
    byte[] bytes = encoded(Filter.NONE);
    bytes[17] ^= 1; // raw length
    assertThat(corrupt(() -> decode(bytes)).reason()).isEqualTo(Reason.CHECKSUM_MISMATCH);
  }

  @Test
  void impossibleHeaderFieldsAreNamed() {
    byte[] unknownFilter = encoded(Filter.NONE);
    unknownFilter[5] = 9;
    resealHeader(unknownFilter);
    assertThat(corrupt(() -> decode(unknownFilter)).reason()).isEqualTo(Reason.BAD_HEADER);

    byte[] lengthDisagrees = encoded(Filter.NONE);
    ByteBuffer.wrap(lengthDisagrees).order(ByteOrder.LITTLE_ENDIAN).putLong(16, 10L * SIZE);
    resealHeader(lengthDisagrees);
    CorruptBlockException e = corrupt(() -> decode(lengthDisagrees));
    assertThat(e.reason()).isEqualTo(Reason.BAD_HEADER);
    assertThat(e).hasMessageContaining("chunks");
  }

  @Test
  void aHeaderClaimingAHugeBlockIsRefusedBeforeAnythingIsAllocated() {
    byte[] huge = encoded(Filter.BYTE_SHUFFLE_2);
    ByteBuffer h = ByteBuffer.wrap(huge).order(ByteOrder.LITTLE_ENDIAN);
    h.putInt(8, 16 << 20); // 16 MiB chunks
    h.putLong(16, (1L << 32) + 100);
    h.putInt(12, 257);
    resealHeader(huge);
    assertThat(corrupt(() -> BlockCodec.decodedLength(ByteBuffer.wrap(huge))).reason())
        .isEqualTo(Reason.BAD_HEADER);

    byte[] manyChunks = encoded(Filter.NONE);
    ByteBuffer m = ByteBuffer.wrap(manyChunks).order(ByteOrder.LITTLE_ENDIAN);
    m.putInt(8, 4096);
    m.putLong(16, 4096L * 500_000);
    m.putInt(12, 500_000);
    resealHeader(manyChunks);
    CorruptBlockException e =
        corrupt(() -> BlockCodec.decode(ByteBuffer.wrap(manyChunks), ByteBuffer.allocate(SIZE)));
    assertThat(e.reason()).isEqualTo(Reason.TRUNCATED);
    assertThat(e).hasMessageContaining("500000 chunks cannot fit");
  }

  @Test
  void truncationAnywhereIsDetected() {
    byte[] bytes = encoded(Filter.BYTE_SHUFFLE_2);
    for (int cut = 0; cut < bytes.length; cut += 97) {
      byte[] prefix = java.util.Arrays.copyOf(bytes, cut);
      CorruptBlockException e = corrupt(() -> decode(prefix));
      assertThat(e.reason()).as("cut at %d", cut).isEqualTo(Reason.TRUNCATED);
      CorruptBlockException fromChannel =
          corrupt(
              () ->
                  BlockCodec.decode(
                      Channels.newChannel(new ByteArrayInputStream(prefix)),
                      ByteBuffer.allocate(SIZE)));
      assertThat(fromChannel.reason()).as("cut at %d, from a channel", cut).isEqualTo(Reason.TRUNCATED);
    }
  }

  @Test
  void aFlippedPayloadBitNamesItsChunk() {
    byte[] bytes = encoded(Filter.BYTE_SHUFFLE_2);
    int secondChunk = secondChunkOffset(bytes);
    bytes[secondChunk + 16 + 40] ^= 0x10;
    CorruptBlockException e = corrupt(() -> decode(bytes));
    assertThat(e.chunkIndex()).isEqualTo(1);
    assertThat(e.offset()).isEqualTo(secondChunk);
    assertThat(e.reason()).isIn(Reason.CHECKSUM_MISMATCH, Reason.SIZE_MISMATCH);
  }

  @Test
  void aStoredLengthPastTheEndIsDetected() {
    byte[] bytes = encoded(Filter.NONE);
    ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putInt(32 + 4, Integer.MAX_VALUE);
    CorruptBlockException e = corrupt(() -> decode(bytes));
    assertThat(e.reason()).isEqualTo(Reason.LENGTH_OUT_OF_BOUNDS);
    assertThat(e.chunkIndex()).isZero();
    assertThat(e.offset()).isEqualTo(32);
  }

  @Test
  void aChunkRawLengthThatDisagreesIsDetected() {
    byte[] bytes = encoded(Filter.NONE);
    ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putInt(32, CHUNK - 1);
    assertThat(corrupt(() -> decode(bytes)).reason()).isEqualTo(Reason.LENGTH_OUT_OF_BOUNDS);
  }

  @Test
  void emptyInputIsTruncated() {
    assertThat(corrupt(() -> BlockCodec.decodedLength(ByteBuffer.allocate(0))).reason())
        .isEqualTo(Reason.TRUNCATED);
  }

  /**
   * Random damage (bit flips, byte overwrites, cuts) to valid containers: every decode either
   * throws {@link CorruptBlockException} or returns exactly the original bytes.
   */
  @Test
  void randomDamageNeverYieldsWrongBytes() {
    SplittableRandom random = new SplittableRandom(42);
    int detected = 0;
    for (Filter filter : Filter.values()) {
      byte[] clean = encoded(filter);
      for (int round = 0; round < 700; round++) {
        byte[] bytes = clean.clone();
        int damage = 1 + random.nextInt(3);
        for (int d = 0; d < damage; d++) {
          int at = random.nextInt(bytes.length);
          if (random.nextBoolean()) {
            bytes[at] ^= (byte) (1 << random.nextInt(8));
          } else {
            bytes[at] = (byte) random.nextInt();
          }
        }
        if (random.nextInt(10) == 0) {
          bytes = java.util.Arrays.copyOf(bytes, random.nextInt(bytes.length));
        }
        ByteBuffer out = ByteBuffer.allocate(SIZE);
        try {
          BlockCodec.decode(ByteBuffer.wrap(bytes), out);
          assertThat(out.flip()).as("a damaged container that decodes must be intact").isEqualTo(original);
        } catch (CorruptBlockException e) {
          detected++;
        } catch (RuntimeException e) {
          fail("damage must be reported as CorruptBlockException, got " + e, e);
        }
      }
    }
    assertThat(detected).isGreaterThan(1500);
  }

  private static int secondChunkOffset(byte[] bytes) {
    int stored = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getInt(32 + 4);
    return 32 + 16 + stored;
  }

  @Test
  void decodingFromAChannelReadsOnlyTheContainer() throws Exception {
    byte[] bytes = encoded(Filter.NONE);
    byte[] followed = java.util.Arrays.copyOf(bytes, bytes.length + 5);
    ByteArrayInputStream in = new ByteArrayInputStream(followed);
    ByteBuffer out = ByteBuffer.allocate(SIZE);
    BlockCodec.decode(Channels.newChannel(in), out);
    assertThat(out.flip()).isEqualTo(original);
    assertThat(in.available()).isEqualTo(5);
    assertThatThrownBy(() -> BlockCodec.decode(Channels.newChannel(in), ByteBuffer.allocate(SIZE)))
        .isInstanceOf(CorruptBlockException.class);
  }
}
