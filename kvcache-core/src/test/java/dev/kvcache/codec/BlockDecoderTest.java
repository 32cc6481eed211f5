package dev.kvcache.codec;

import static dev.kvcache.codec.BlockCodecTest.codec;
import static dev.kvcache.codec.BlockCodecTest.data;
import static dev.kvcache.codec.BlockCodecTest.encode;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.testkit.TestBytes;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class BlockDecoderTest {

  private static final int CHUNK = 16 << 10;

  /** Collects what a decoder hands over: the length first, then the chunks. */
  private static final class Collected implements BlockDecoder.Sink {
    long length = -1;
    final List<Integer> chunkSizes = new ArrayList<>();
    ByteBuffer bytes;

    @Override
    public void start(long decodedLength) {
      assertThat(length).as("start comes once, first").isEqualTo(-1);
      length = decodedLength;
      bytes = ByteBuffer.allocate((int) decodedLength);
    }

    @Override
    public void accept(ByteBuffer chunk) {
      chunkSizes.add(chunk.remaining());
      bytes.put(chunk);
    }
  }

  /** Feeds {@code container} in parts of random sizes, from one byte to more than two chunks. */
  private static void feed(BlockDecoder decoder, ByteBuffer container, long seed)
      throws IOException {
    SplittableRandom random = new SplittableRandom(seed);
    for (int at = container.position(); at < container.limit(); ) {
      int n = Math.min(container.limit() - at,
          random.nextInt(4) == 0 ? 1 : random.nextInt(1, 2 * CHUNK + 7));
      ByteBuffer part = container.duplicate().position(at).limit(at + n);
      decoder.write(part);
      assertThat(part.hasRemaining()).as("a write takes its whole part").isFalse();
      at += n;
    }
  }

  @ParameterizedTest(name = "{0}, {1} bytes of {2}")
  @MethodSource("dev.kvcache.codec.BlockCodecTest#cases")
  void partsDecodeToTheBlock(Filter filter, int size, String kind) throws IOException {
    ByteBuffer src = data(kind, size);
    ByteBuffer container = encode(codec(filter), src);
    Collected sink = new Collected();
    try (BlockDecoder decoder = BlockCodec.decoder(sink)) {
      feed(decoder, container, size);
      assertThat(decoder.isComplete()).isTrue();
      assertThat(decoder.finish()).isEqualTo(size);
    }
    assertThat(sink.length).isEqualTo(size);
    assertThat(sink.bytes.flip()).isEqualTo(src);
    assertThat(sink.chunkSizes).as("one call per chunk")
        .hasSize((int) ContainerHeader.chunkCount(size, CHUNK));
  }

  @Test
  void eachChunkIsHandedOverOnceItIsComplete() throws IOException {
    ByteBuffer container = encode(codec(Filter.NONE), data("random", 2 * CHUNK + 5));
    Collected sink = new Collected();
    BlockDecoder decoder = BlockCodec.decoder(sink);
    decoder.write(container.duplicate().limit(31));
    assertThat(decoder.decodedLength()).as("header not yet whole").isEqualTo(-1);
    decoder.write(container.duplicate().position(31).limit(32));
    assertThat(decoder.decodedLength()).isEqualTo(2 * CHUNK + 5);
    assertThat(sink.length).isEqualTo(2 * CHUNK + 5);
    int firstChunkEnd = 32 + 16 + CHUNK; // random bytes: stored raw
    decoder.write(container.duplicate().position(32).limit(firstChunkEnd - 1));
    assertThat(sink.chunkSizes).isEmpty();
    decoder.write(container.duplicate().position(firstChunkEnd - 1).limit(firstChunkEnd));
    assertThat(sink.chunkSizes).containsExactly(CHUNK);
    assertThatThrownBy(decoder::finish).isInstanceOf(CorruptBlockException.class)
        .hasMessageContaining("ended in chunk 1 of 3");
  }

  @Test
  void aDamagedChunkIsNeverHandedOverAndStopsTheDecoder() throws IOException {
    ByteBuffer container = encode(codec(Filter.BYTE_SHUFFLE_2), TestBytes.halfFloatsDirect(3 * CHUNK, 3));
    ByteBuffer damaged = ByteBuffer.allocate(container.remaining()).put(container.duplicate()).flip();
    int last = damaged.limit() - 10;
    damaged.put(last, (byte) (damaged.get(last) ^ 1));
    Collected sink = new Collected();
    BlockDecoder decoder = BlockCodec.decoder(sink);
    assertThatThrownBy(() -> decoder.write(damaged.duplicate()))
        .isInstanceOf(CorruptBlockException.class);
    assertThat(sink.chunkSizes).as("the two intact chunks only").hasSize(2);
    assertThatThrownBy(() -> decoder.write(ByteBuffer.allocate(1)))
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void bytesAfterTheContainerOrARefusedLengthStopTheDecoder() throws IOException {
    ByteBuffer container = encode(codec(Filter.NONE), data("zeros", 1000));
    ByteBuffer longer = ByteBuffer.allocate(container.remaining() + 1).put(container.duplicate());
    BlockDecoder decoder = BlockCodec.decoder(new Collected());
    assertThatThrownBy(() -> decoder.write(longer.clear()))
        .isInstanceOf(CorruptBlockException.class)
        .hasMessageContaining("1 more bytes follow the container's last chunk");

    List<ByteBuffer> accepted = new ArrayList<>();
    BlockDecoder refusing = BlockCodec.decoder(new BlockDecoder.Sink() {
      @Override
      public void start(long decodedLength) throws IOException {
        throw new IOException("too long: " + decodedLength);
      }

      @Override
      public void accept(ByteBuffer chunk) {
        accepted.add(chunk);
      }
    });
    assertThatThrownBy(() -> refusing.write(container.duplicate()))
        .isInstanceOf(IOException.class).hasMessage("too long: 1000");
    assertThat(accepted).isEmpty();

    BlockDecoder empty = BlockCodec.decoder(new Collected());
    empty.write(ByteBuffer.allocate(0));
    assertThatThrownBy(empty::finish).isInstanceOf(CorruptBlockException.class)
        .hasMessageContaining("only 0 bytes arrived");
  }
}
