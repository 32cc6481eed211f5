package dev.kvcache.codec;

import static dev.kvcache.codec.BlockCodecTest.codec;
import static dev.kvcache.codec.BlockCodecTest.data;
import static dev.kvcache.codec.BlockCodecTest.encode;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.WritableByteChannel;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class BlockEncoderTest {

  private static final int CHUNK = 16 << 10;

  /**
   * Feeds {@code src} in parts of random sizes (from one byte to more than two chunks, on the heap
   * and off it) and returns the container written.
   */
  private static ByteBuffer encodeInParts(BlockCodec codec, ByteBuffer src, long seed)
      throws IOException {
    ByteArrayOutputStream sink = new ByteArrayOutputStream();
    SplittableRandom random = new SplittableRandom(seed);
    long length;
    try (BlockEncoder encoder = codec.encoder(src.remaining(), Channels.newChannel(sink))) {
      for (int at = src.position(); at < src.limit(); ) {
        int n = Math.min(src.limit() - at, random.nextInt(4) == 0 ? 1 : random.nextInt(1, 2 * CHUNK + 7));
        ByteBuffer part = src.duplicate().position(at).limit(at + n);
        if (random.nextBoolean()) {
          part = ByteBuffer.allocate(n).put(part).flip();
        }
        encoder.write(part);
        assertThat(part.hasRemaining()).as("a write takes its whole part").isFalse();
        at += n;
        assertThat(encoder.remaining()).isEqualTo(src.limit() - at);
      }
      length = encoder.finish();
    }
    assertThat(length).isEqualTo(sink.size());
    return ByteBuffer.wrap(sink.toByteArray());
  }

  @ParameterizedTest(name = "{0}, {1} bytes of {2}")
  @MethodSource("dev.kvcache.codec.BlockCodecTest#cases")
  void partsMakeTheSameContainerAsTheWholeBlock(Filter filter, int size, String kind)
      throws IOException {
    BlockCodec codec = codec(filter);
    ByteBuffer src = data(kind, size);
    ByteBuffer container = encodeInParts(codec, src, size);
    assertThat(container).isEqualTo(encode(codec, src));
    ByteBuffer decoded = ByteBuffer.allocate(size);
    BlockCodec.decode(container, decoded);
    assertThat(decoded.flip()).isEqualTo(src);
  }

  @Test
  void chunksAreWrittenAsSoonAsTheyAreComplete() throws IOException {
    BlockCodec codec = codec(Filter.NONE);
    ByteArrayOutputStream sink = new ByteArrayOutputStream();
    ByteBuffer src = data("random", 2 * CHUNK + 100);
    try (BlockEncoder encoder = codec.encoder(src.remaining(), Channels.newChannel(sink))) {
      assertThat(sink.size()).as("the header, at once").isEqualTo(BlockCodec.CONTAINER_HEADER_BYTES);
      encoder.write(src.duplicate().limit(CHUNK - 1));
      assertThat(sink.size()).as("a chunk not yet complete is held").isEqualTo(32);
      encoder.write(src.duplicate().position(CHUNK - 1).limit(CHUNK + 1));
      assertThat(sink.size()).as("the first chunk, raw").isEqualTo(32 + 16 + CHUNK);
      assertThat(encoder.written()).isEqualTo(sink.size());
    }
  }

  @Test
  void aPartTooLongOrAnIncompleteBlockIsRefused() throws IOException {
    BlockCodec codec = codec(Filter.BYTE_SHUFFLE_2);
    WritableByteChannel sink = Channels.newChannel(new ByteArrayOutputStream());
    BlockEncoder encoder = codec.encoder(100, sink);
    ByteBuffer tooLong = ByteBuffer.allocate(101);
    assertThatThrownBy(() -> encoder.write(tooLong))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("101 bytes does not fit: 100 of the block's 100 bytes are left");
    assertThat(tooLong.position()).isZero();
    encoder.write(ByteBuffer.allocate(60));
    assertThatThrownBy(encoder::finish)
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("60 of its 100 bytes");
    encoder.write(ByteBuffer.allocate(40));
    assertThat(encoder.finish()).isPositive();
    assertThatThrownBy(() -> encoder.write(ByteBuffer.allocate(1)))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("finished or closed");
    encoder.close();

    assertThatThrownBy(() -> codec.encoder(-1, sink)).isInstanceOf(IllegalArgumentException.class);
    BlockEncoder closed = codec.encoder(10, sink);
    closed.close();
    assertThatThrownBy(closed::finish).isInstanceOf(IllegalStateException.class);
  }
}
