package dev.kvcache.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.GetStatus;
import dev.kvcache.spi.Crc32c;
import dev.kvcache.wire.Wire;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2Headers;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Each block of a batch answer is checked against its own CRC32C as its bytes arrive. */
class BatchSinkTest {

  private static byte[] block(int length, int seed) {
    byte[] b = new byte[length];
    new SplittableRandom(seed).nextBytes(b);
    return b;
  }

  private static String crc(byte[] b) {
    return Wire.checksum(Crc32c.of(ByteBuffer.wrap(b)));
  }

  private static Http2Headers answer(String lengths, String checksums) {
    Http2Headers h = new DefaultHttp2Headers().status("200")
        .set(Wire.BLOCK_LENGTHS, lengths);
    return checksums == null ? h : h.set(Wire.BLOCK_CHECKSUMS, checksums);
  }

  private static List<ByteBuffer> buffers(int n, int each) {
    return java.util.stream.IntStream.range(0, n)
        .mapToObj(i -> ByteBuffer.allocateDirect(each)).toList();
  }

  @Test
  void aDamagedBlockIsLeftUnansweredAndTheOthersArrive() {
    byte[] a = block(70_000, 1);
    byte[] b = block(50_000, 2);
    byte[] c = block(30_000, 3);
    String checksums = crc(a) + "," + crc(b) + "," + crc(c);
    b[12_345] ^= 4; // damaged after the server computed its checksum
    List<ByteBuffer> dsts = buffers(4, 70_000);
    BatchSink sink = new BatchSink(dsts, 1 << 20, true);
    sink.begin(200, answer("70000,0,50000,30000", checksums));
    ByteBuf body = Unpooled.wrappedBuffer(a, b, c);
    while (body.isReadable()) { // in frames that straddle the blocks
      sink.accept(body.readSlice(Math.min(16_384, body.readableBytes())));
    }
    sink.end();
    assertThat(sink.result(0)).isEqualTo(GetStatus.HIT);
    assertThat(sink.result(1)).isEqualTo(GetStatus.MISS);
    assertThat(sink.result(2)).as("damaged: not answered").isNull();
    assertThat(sink.damaged(2)).isTrue();
    assertThat(sink.result(3)).isEqualTo(GetStatus.HIT);
    assertThat(dsts.get(0).position()).isEqualTo(a.length);
    assertThat(dsts.get(2).position()).as("not reported read").isZero();
    assertThat(dsts.get(3).position()).isEqualTo(c.length);
  }

  @Test
  void anAnswerWithoutItsChecksumsOrWithTheWrongCountBreaksTheProtocol() {
    byte[] a = block(1000, 1);
    assertThatThrownBy(() -> new BatchSink(buffers(1, 1000), 1 << 20, true)
        .begin(200, answer("1000", null)))
        .hasMessageContaining(Wire.BLOCK_CHECKSUMS);
    assertThatThrownBy(() -> new BatchSink(buffers(2, 1000), 1 << 20, true)
        .begin(200, answer("1000,1000", crc(a))))
        .hasMessageContaining("checksums");
    assertThatThrownBy(() -> new BatchSink(buffers(2, 1000), 1 << 20, true)
        .begin(200, answer("1000,0", crc(a) + "," + crc(a))))
        .hasMessageContaining("checksums");
    assertThatThrownBy(() -> new BatchSink(buffers(1, 1000), 1 << 20, true)
        .begin(200, answer("1000", "nonsense")))
        .hasMessageContaining("malformed");
    BatchSink unchecked = new BatchSink(buffers(1, 1000), 1 << 20, false);
    assertThat(unchecked.begin(200, answer("1000", null))).isTrue();
    assertThat(new BatchSink(buffers(2, 1000), 1 << 20, true).begin(200, answer("0,0", "")))
        .as("no block, no checksum").isTrue();
  }
}
