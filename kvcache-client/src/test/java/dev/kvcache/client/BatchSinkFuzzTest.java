package dev.kvcache.client;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.kvcache.GetStatus;
import dev.kvcache.wire.Wire;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2Headers;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;

/**
 * Fuzzes the Java client's reader of a batch GET answer ({@link BatchSink}) with Jazzer: the
 * headers that frame it and the body, in frames of any size. In a normal test run this replays the
 * seeds under {@code src/test/resources/dev/kvcache/client/BatchSinkFuzzTestInputs/}; to fuzz, as
 * {@code .ci/run} does for 30 seconds:
 *
 * <pre>
 * JAZZER_FUZZ=1 ./mvnw -pl kvcache-client test -Dtest=BatchSinkFuzzTest
 * </pre>
 *
 * <p>The property: the sink refuses the answer with an {@link IllegalStateException} (as a broken
 * protocol), or takes it; either way no buffer is written past its limit, and a key answered
 * {@link GetStatus#HIT} has its buffer's position moved by exactly its block's announced length,
 * any other key's not at all.
 */
@Tag("fuzz")
class BatchSinkFuzzTest {

  @FuzzTest(maxDuration = "30s")
  void aBatchAnswerIsTakenOrRefusedNeverMisread(FuzzedDataProvider data) {
    int keys = data.consumeInt(1, 6);
    List<ByteBuffer> dsts = new ArrayList<>();
    List<ByteBuffer> guarded = new ArrayList<>();
    for (int i = 0; i < keys; i++) {
      int room = data.consumeInt(0, 64);
      ByteBuffer whole = ByteBuffer.allocate(room + 8); // 8 guard bytes past the limit
      guarded.add(whole);
      dsts.add(whole.duplicate().limit(room));
    }
    boolean verify = data.consumeBoolean();
    Http2Headers headers = new DefaultHttp2Headers().status("200");
    if (data.consumeInt(0, 15) != 0) {
      headers.set(Wire.BLOCK_LENGTHS, data.consumeString(40));
    }
    if (data.consumeInt(0, 15) != 0) {
      headers.set(Wire.BLOCK_CHECKSUMS, data.consumeString(80));
    }
    if (data.consumeBoolean()) {
      headers.setLong("content-length", data.consumeLong(0, 400));
    }
    BatchSink sink = new BatchSink(dsts, 64, verify);
    try {
      sink.begin(200, headers);
      while (data.remainingBytes() > 0) {
        sink.accept(Unpooled.wrappedBuffer(data.consumeBytes(data.consumeInt(1, 50))));
      }
      sink.end();
    } catch (IllegalStateException refused) {
      // a broken protocol; what was taken before stays as checked below
    }
    for (int i = 0; i < keys; i++) {
      ByteBuffer whole = guarded.get(i);
      for (int g = whole.capacity() - 8; g < whole.capacity(); g++) {
        assertThat(whole.get(g)).as("a byte past buffer %d's limit", i).isZero();
      }
      int moved = dsts.get(i).position();
      if (sink.result(i) == GetStatus.HIT) {
        assertThat(moved).isPositive();
      } else {
        assertThat(moved).as("buffer %d, %s", i, sink.result(i)).isZero();
      }
    }
  }
}
