package dev.kvcache.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.spi.Crc32c;
import dev.kvcache.wire.Wire;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2Headers;
import java.nio.ByteBuffer;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** A block whose bytes arrive damaged, against the checksum the server sent, never counts. */
class BlockSinkTest {

  private static Http2Headers answer(int length, int crc) {
    return new DefaultHttp2Headers().status("200").setInt("content-length", length)
        .set(Wire.CHECKSUM, Wire.checksum(crc));
  }

  private static byte[] block() {
    byte[] b = new byte[100_000];
    new SplittableRandom(1).nextBytes(b);
    return b;
  }

  @Test
  void bytesThatMatchTheServersChecksumComplete() {
    byte[] block = block();
    ByteBuffer dst = ByteBuffer.allocateDirect(block.length);
    BlockSink sink = new BlockSink(dst, 1 << 20, true);
    sink.begin(200, answer(block.length, Crc32c.of(ByteBuffer.wrap(block))));
    sink.accept(Unpooled.wrappedBuffer(block, 0, 30_000));
    sink.accept(Unpooled.wrappedBuffer(block, 30_000, block.length - 30_000));
    sink.end();
    assertThat(sink.complete()).isTrue();
    assertThat(dst.position()).isEqualTo(block.length);
    assertThat(sink.checksum()).hasValue(Crc32c.of(ByteBuffer.wrap(block)));
  }

  @Test
  void aBitFlippedOnTheWayIsCaughtAndTheCallersBufferIsNotFilled() {
    byte[] block = block();
    int crc = Crc32c.of(ByteBuffer.wrap(block));
    block[54_321] ^= 0x10; // damaged between the server's memory and this buffer
    ByteBuffer dst = ByteBuffer.allocate(block.length);
    BlockSink sink = new BlockSink(dst, 1 << 20, true);
    sink.begin(200, answer(block.length, crc));
    sink.accept(Unpooled.wrappedBuffer(block));
    assertThatThrownBy(sink::end).isInstanceOf(DamagedBlockException.class);
    assertThat(sink.complete()).isFalse();
    assertThat(dst.position()).isZero();
  }

  @Test
  void withChecksumsOffNothingIsChecked() {
    byte[] block = block();
    BlockSink sink = new BlockSink(ByteBuffer.allocate(block.length), 1 << 20, false);
    sink.begin(200, answer(block.length, 12345));
    sink.accept(Unpooled.wrappedBuffer(block));
    sink.end();
    assertThat(sink.complete()).isTrue();
    assertThat(sink.checksum()).isEmpty();
  }

  @Test
  void anAnswerWithoutItsChecksumBreaksTheProtocolWhenChecking() {
    Http2Headers bare = new DefaultHttp2Headers().status("200").setInt("content-length", 10);
    BlockSink sink = new BlockSink(ByteBuffer.allocate(10), 1 << 20, true);
    assertThatThrownBy(() -> sink.begin(200, bare)).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(Wire.CHECKSUM);
    BlockSink unchecked = new BlockSink(ByteBuffer.allocate(10), 1 << 20, false);
    assertThat(unchecked.begin(200, bare)).isTrue();
  }
}
