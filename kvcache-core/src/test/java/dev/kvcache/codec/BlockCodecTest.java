package dev.kvcache.codec;

import static dev.kvcache.testkit.TestBytes.halfFloatsDirect;
import static dev.kvcache.testkit.TestBytes.randomDirect;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;
import java.util.stream.Stream;

class BlockCodecTest {

  private static final int CHUNK = 16 << 10;

  static Stream<Arguments> cases() {
    int[] sizes = {0, 1, 3, 4095, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + CHUNK / 2 + 1};
    Stream.Builder<Arguments> cases = Stream.builder();
    for (Filter filter : Filter.values()) {
      for (int size : sizes) {
        cases.add(Arguments.of(filter, size, "random"));
        cases.add(Arguments.of(filter, size, "halfFloats"));
        cases.add(Arguments.of(filter, size, "zeros"));
      }
    }
    return cases.build();
  }

  static ByteBuffer data(String kind, int size) {
    switch (kind) {
      case "random":
        return randomDirect(size, size);
      case "halfFloats":
        return halfFloatsDirect(size, size);
      default:
        return ByteBuffer.allocateDirect(size);
    }
  }

  static BlockCodec codec(Filter filter) {
    return BlockCodec.builder().chunkSizeBytes(CHUNK).filter(filter).build();
  }

  static ByteBuffer encode(BlockCodec codec, ByteBuffer src) {
    ByteBuffer dst = ByteBuffer.allocateDirect((int) codec.maxEncodedLength(src.remaining()));
    codec.encode(src, dst);
    return dst.flip();
  }

  @ParameterizedTest(name = "{0}, {1} bytes of {2}")
  @MethodSource("cases")
  void roundTripsThroughBuffers(Filter filter, int size, String kind) throws IOException {
    BlockCodec codec = codec(filter);
    ByteBuffer src = data(kind, size);
    ByteBuffer encoded = encode(codec, src);
    assertThat(src.position()).isZero();
    assertThat(BlockCodec.decodedLength(encoded)).isEqualTo(size);

    ByteBuffer decoded = ByteBuffer.allocateDirect(size + 10);
    decoded.position(5);
    BlockCodec.decode(encoded, decoded);
    assertThat(encoded.hasRemaining()).as("the whole container is consumed").isFalse();
    assertThat(decoded.position()).isEqualTo(5 + size);
    assertThat(decoded.flip().position(5)).isEqualTo(src);
  }

  @ParameterizedTest(name = "{0}, {1} bytes of {2}")
  @MethodSource("cases")
  void roundTripsThroughChannels(Filter filter, int size, String kind) throws IOException {
    BlockCodec codec = codec(filter);
    ByteBuffer src = data(kind, size);
    ByteArrayOutputStream sink = new ByteArrayOutputStream();
    long written = codec.encode(src, Channels.newChannel(sink));
    assertThat(written).isEqualTo(sink.size());
    assertThat(ByteBuffer.wrap(sink.toByteArray())).as("same bytes as the buffer encoder")
        .isEqualTo(encode(codec, src));

    ByteBuffer decoded = ByteBuffer.allocate(size);
    BlockCodec.decode(Channels.newChannel(new ByteArrayInputStream(sink.toByteArray())), decoded);
    assertThat(decoded.flip()).isEqualTo(src);

    ByteArrayOutputStream plain = new ByteArrayOutputStream();
    long decodedBytes = BlockCodec.decode(
        Channels.newChannel(new ByteArrayInputStream(sink.toByteArray())), Channels.newChannel(plain));
    assertThat(decodedBytes).isEqualTo(size);
    assertThat(ByteBuffer.wrap(plain.toByteArray())).as("decoded from channel to channel").isEqualTo(src);
  }

  @Test
  void aTruncatedOrDamagedContainerDecodedToAChannelIsCorrupt() {
    ByteBuffer encoded = encode(codec(Filter.BYTE_SHUFFLE_2), halfFloatsDirect(3 * CHUNK, 4));
    byte[] bytes = new byte[encoded.remaining()];
    encoded.get(bytes);
    byte[] cut = java.util.Arrays.copyOf(bytes, bytes.length - 1);
    assertThatThrownBy(() -> BlockCodec.decode(Channels.newChannel(new ByteArrayInputStream(cut)),
            Channels.newChannel(new ByteArrayOutputStream())))
        .isInstanceOf(CorruptBlockException.class)
        .hasMessageContaining("ended 1 bytes early");
    bytes[bytes.length - 100] ^= 1;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    assertThatThrownBy(() -> BlockCodec.decode(
            Channels.newChannel(new ByteArrayInputStream(bytes)), Channels.newChannel(out)))
        .isInstanceOf(CorruptBlockException.class);
    assertThat(out.size()).as("the damaged last chunk is not written").isEqualTo(2 * CHUNK);
  }

  @ParameterizedTest(name = "{0}, {1} bytes of {2}")
  @MethodSource("cases")
  void encodesFromAStreamAsFromABuffer(Filter filter, int size, String kind) throws IOException {
    BlockCodec codec = codec(filter);
    ByteBuffer src = data(kind, size);
    byte[] raw = new byte[size];
    src.get(0, raw);
    ByteBuffer expected = encode(codec, src);

    ByteArrayOutputStream sink = new ByteArrayOutputStream();
    long written = codec.encode(
        Channels.newChannel(new ByteArrayInputStream(raw)), size, Channels.newChannel(sink));
    assertThat(written).isEqualTo(sink.size());
    assertThat(ByteBuffer.wrap(sink.toByteArray())).isEqualTo(expected);

    ByteBuffer dst = ByteBuffer.allocateDirect((int) codec.maxEncodedLength(size) + 3);
    dst.position(3);
    int n = codec.encode(Channels.newChannel(new ByteArrayInputStream(raw)), size, dst);
    assertThat(dst.position()).isEqualTo(3 + n);
    assertThat(dst.flip().position(3)).isEqualTo(expected);
  }

  @Test
  void aStreamShorterThanItsLengthIsAnEofNamingTheShortfall() {
    BlockCodec codec = codec(Filter.BYTE_SHUFFLE_2);
    byte[] raw = new byte[CHUNK + 10];
    ByteBuffer dst = ByteBuffer.allocate((int) codec.maxEncodedLength(CHUNK + 11));
    assertThatThrownBy(() -> codec.encode(Channels.newChannel(new ByteArrayInputStream(raw)), CHUNK + 11, dst))
        .isInstanceOf(java.io.EOFException.class)
        .hasMessageContaining(CHUNK + 10 + " of " + (CHUNK + 11));
    assertThat(dst.position()).isZero();
    assertThatThrownBy(() -> codec.encode(
            Channels.newChannel(new ByteArrayInputStream(raw)), CHUNK + 11,
            Channels.newChannel(new ByteArrayOutputStream())))
        .isInstanceOf(java.io.EOFException.class);
    assertThatThrownBy(() -> codec.encode(
            Channels.newChannel(new ByteArrayInputStream(raw)), -1, dst))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aCodecCallNestedInAChannelOnTheSameThreadDoesNotShareBuffers() throws IOException {
    BlockCodec codec = codec(Filter.BYTE_SHUFFLE_2);
    byte[] inner = new byte[encode(codec, halfFloatsDirect(3 * CHUNK, 2)).remaining()];
    encode(codec, halfFloatsDirect(3 * CHUNK, 2)).get(inner);
    ByteBuffer src = halfFloatsDirect(3 * CHUNK + 5, 3);
    ByteArrayOutputStream sink = new ByteArrayOutputStream();
    java.nio.channels.WritableByteChannel decodingSink = new java.nio.channels.WritableByteChannel() {
      @Override
      public int write(ByteBuffer b) throws IOException {
        // decode another container through a channel while the outer encode holds its buffers
        ByteBuffer decoded = ByteBuffer.allocate(3 * CHUNK);
        BlockCodec.decode(Channels.newChannel(new ByteArrayInputStream(inner)), decoded);
        assertThat(decoded.flip()).isEqualTo(halfFloatsDirect(3 * CHUNK, 2));
        int n = b.remaining();
        byte[] bytes = new byte[n];
        b.get(bytes);
        sink.write(bytes);
        return n;
      }

      @Override
      public boolean isOpen() {
        return true;
      }

      @Override
      public void close() {}
    };
    codec.encode(src, decodingSink);
    assertThat(ByteBuffer.wrap(sink.toByteArray())).isEqualTo(encode(codec, src));
  }

  @Test
  void noContainerIsLongerThanMaxContainerLength() {
    int size = 300_001;
    long bound = BlockCodec.maxContainerLength(size);
    for (int chunk : new int[] {4 << 10, 64 << 10, 16 << 20}) {
      BlockCodec codec = BlockCodec.builder().chunkSizeBytes(chunk).build();
      assertThat(codec.maxEncodedLength(size)).as("chunk " + chunk).isLessThanOrEqualTo(bound);
      assertThat(encode(codec, randomDirect(size, 9)).remaining()).isLessThanOrEqualTo((int) bound);
    }
    assertThat(BlockCodec.builder().chunkSizeBytes(4 << 10).build().maxEncodedLength(size))
        .as("the smallest chunks reach the bound").isEqualTo(bound);
  }

  @Test
  void randomBytesGrowOnlyByTheHeaders() throws IOException {
    BlockCodec codec = codec(Filter.NONE);
    int size = 10 * CHUNK + 123;
    ByteBuffer encoded = encode(codec, randomDirect(size, 1));
    assertThat(encoded.remaining()).isEqualTo(32 + 11 * 16 + size);
  }

  @Test
  void compressibleBytesShrinkAndShuffleHelpsHalfFloats() {
    int size = 8 * CHUNK;
    assertThat(encode(codec(Filter.NONE), ByteBuffer.allocateDirect(size)).remaining())
        .isLessThan(size / 50);
    int plain = encode(codec(Filter.NONE), halfFloatsDirect(size, 3)).remaining();
    int shuffled = encode(codec(Filter.BYTE_SHUFFLE_2), halfFloatsDirect(size, 3)).remaining();
    // about 0.84 with these half floats, whose high bytes take one of three values
    assertThat(shuffled).as("byte shuffle groups the repetitive high bytes")
        .isLessThan(plain * 9 / 10);
  }

  @ParameterizedTest
  @EnumSource(Filter.class)
  void largeChunksOfRandomBytesAreStoredRawAndCompressibleOnesAreNot(Filter filter)
      throws IOException {
    BlockCodec codec = BlockCodec.builder().chunkSizeBytes(256 << 10).filter(filter).build();
    int size = 3 * (256 << 10) + 1000;
    ByteBuffer random = randomDirect(size, 9);
    ByteBuffer encoded = encode(codec, random);
    assertThat(encoded.remaining()).isEqualTo(32 + 4 * 16 + size);
    ByteBuffer decoded = ByteBuffer.allocate(size);
    BlockCodec.decode(encoded, decoded);
    assertThat(decoded.flip()).isEqualTo(random);

    // a random 4 KiB pattern repeated: every filter keeps the repeats, so every chunk compresses
    ByteBuffer repeated = ByteBuffer.allocateDirect(size);
    ByteBuffer pattern = randomDirect(4096, 9);
    for (int i = 0; i < size; i++) {
      repeated.put(i, pattern.get(i % 4096));
    }
    assertThat(encode(codec, repeated).remaining()).isLessThan(size / 10);
  }

  @Test
  void aChunkCompressibleOnlyInPlacesIsStillCompressed() {
    // random bytes, except for a fixed 16-byte pattern every 100 bytes in the second half only:
    // samples in the first half find nothing to compress, the chunk as a whole saves about 6%
    int chunk = 256 << 10;
    ByteBuffer src = randomDirect(chunk, 5);
    for (int at = chunk / 2; at + 16 <= chunk; at += 100) {
      for (int k = 0; k < 16; k++) {
        src.put(at + k, (byte) (0xa0 + k));
      }
    }
    BlockCodec codec = BlockCodec.builder().chunkSizeBytes(chunk).build();
    assertThat(encode(codec, src).remaining()).isLessThan(chunk * 97 / 100);
  }

  @Test
  void bitShuffleCompressesHalfFloatsBetterThanNoFilter() {
    int size = 8 * CHUNK;
    int plain = encode(codec(Filter.NONE), halfFloatsDirect(size, 3)).remaining();
    int shuffled = encode(codec(Filter.BIT_SHUFFLE_2), halfFloatsDirect(size, 3)).remaining();
    assertThat(shuffled).isLessThan(plain * 3 / 4);
  }

  @Test
  void aDestinationTooSmallIsAProgrammerError() throws IOException {
    BlockCodec codec = codec(Filter.NONE);
    ByteBuffer src = randomDirect(1000, 1);
    assertThatThrownBy(() -> codec.encode(src, ByteBuffer.allocate(1000)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("may take");
    ByteBuffer encoded = encode(codec, src);
    assertThatThrownBy(() -> BlockCodec.decode(encoded, ByteBuffer.allocate(999)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("decodes to 1000");
    assertThat(encoded.position()).isZero();
  }

  @Test
  void settingsAreValidated() {
    assertThatThrownBy(() -> BlockCodec.builder().chunkSizeBytes(1000))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("chunk size");
    assertThatThrownBy(() -> BlockCodec.builder().minSavingsPercent(100))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> BlockCodec.builder().filter(null))
        .isInstanceOf(NullPointerException.class);
  }
}
