package dev.kvcache.codec;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.IntUnaryOperator;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Decodes the committed containers in {@code src/test/resources/codec-vectors/} (format version 1)
 * and checks them against content defined by formulas, so that a change to the format, or to the
 * decoder, cannot slip by. {@code docs/codec-format.md} lists them. To write them anew (only when
 * the format version changes, keeping the old ones), run this class with
 * {@code -Dkvcache.writeCodecVectors=src/test/resources/codec-vectors}.
 */
@Tag("vectors")
class CodecVectorsTest {

  /** A vector: file name, decoded length, content formula, filter and chunk size it was made with. */
  private record Vector(
      String file, int length, IntUnaryOperator content, Filter filter, int chunkSize) {

    ByteBuffer expected() {
      ByteBuffer b = ByteBuffer.allocate(length);
      for (int i = 0; i < length; i++) {
        b.put(i, (byte) content.applyAsInt(i));
      }
      return b;
    }
  }

  private static final Vector[] VECTORS = {
    new Vector("empty.kvcz", 0, i -> 0, Filter.NONE, 4096),
    new Vector("none-periodic-10000.kvcz", 10_000, i -> (i * 31 + 7) % 251, Filter.NONE, 4096),
    new Vector(
        "shuffle2-halffloats-10001.kvcz",
        10_001,
        i -> i % 2 == 0 ? (i * 7) & 0xff : 0x3c,
        Filter.BYTE_SHUFFLE_2,
        4096),
    new Vector(
        "shuffle4-floats-9000.kvcz",
        9_000,
        i -> i % 4 == 3 ? 0x3f : i % 4 == 2 ? 0x80 : (i * 13) & 0xff,
        Filter.BYTE_SHUFFLE_4,
        8192),
    new Vector("raw-xorshift-4196.kvcz", 4_196, CodecVectorsTest::xorshiftByte, Filter.NONE, 4096),
    new Vector(
        "bitshuffle2-halffloats-10001.kvcz",
        10_001,
        i -> i % 2 == 0 ? (i * 7) & 0xff : 0x3c,
        Filter.BIT_SHUFFLE_2,
        4096),
    new Vector("bitshuffle1-steps-6000.kvcz", 6_000, i -> (i / 3) & 0x0f, Filter.BIT_SHUFFLE_1, 4096),
  };

  /** Byte i of a xorshift32 stream seeded with 2463534242: incompressible, so stored raw. */
  private static int xorshiftByte(int i) {
    int x = (int) 2463534242L;
    for (int k = 0; k <= i / 4; k++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
    }
    return (x >>> (8 * (i % 4))) & 0xff;
  }

  @Test
  void committedVectorsDecodeToTheirContent() throws IOException {
    String writeTo = System.getProperty("kvcache.writeCodecVectors");
    if (writeTo != null) {
      writeVectors(Path.of(writeTo));
    }
    for (Vector v : VECTORS) {
      ByteBuffer encoded = ByteBuffer.wrap(read(v.file()));
      assertThat(BlockCodec.decodedLength(encoded)).as(v.file()).isEqualTo(v.length());
      ByteBuffer h = encoded.duplicate().order(ByteOrder.LITTLE_ENDIAN);
      assertThat(h.get(4)).as("%s: format version", v.file()).isEqualTo((byte) 1);
      assertThat(h.get(5)).as("%s: filter", v.file()).isEqualTo((byte) v.filter().formatId());
      assertThat(h.get(6)).as("%s: element size", v.file()).isEqualTo((byte) v.filter().elementSizeBytes());
      assertThat(h.getInt(8)).as("%s: chunk size", v.file()).isEqualTo(v.chunkSize());
      ByteBuffer decoded = ByteBuffer.allocate(v.length());
      BlockCodec.decode(encoded, decoded);
      assertThat(decoded.flip()).as(v.file()).isEqualTo(v.expected());
      assertThat(encoded.hasRemaining()).as("%s: trailing bytes", v.file()).isFalse();
    }
  }

  @Test
  void theIncompressibleVectorIsStoredRaw() throws IOException {
    byte[] bytes = read("raw-xorshift-4196.kvcz");
    assertThat(bytes).hasSize(32 + 2 * 16 + 4196);
    assertThat(bytes[32 + 8]).as("first chunk mode").isEqualTo((byte) 0);
  }

  private static byte[] read(String file) throws IOException {
    try (InputStream in = CodecVectorsTest.class.getResourceAsStream("/codec-vectors/" + file)) {
      assertThat(in).as("test vector %s", file).isNotNull();
      return in.readAllBytes();
    }
  }

  private static void writeVectors(Path dir) throws IOException {
    Files.createDirectories(dir);
    for (Vector v : VECTORS) {
      BlockCodec codec = BlockCodec.builder().filter(v.filter()).chunkSizeBytes(v.chunkSize()).build();
      ByteBuffer src = v.expected();
      ByteBuffer dst = ByteBuffer.allocate((int) codec.maxEncodedLength(v.length()));
      codec.encode(src, dst);
      byte[] bytes = new byte[dst.flip().remaining()];
      dst.get(bytes);
      Files.write(dir.resolve(v.file()), bytes);
    }
  }
}
