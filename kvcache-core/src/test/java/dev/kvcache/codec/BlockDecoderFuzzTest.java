package dev.kvcache.codec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.io.ByteArrayInputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import org.junit.jupiter.api.Tag;

/**
 * Fuzzes the decoder with Jazzer. In a normal test run this replays the seeds in {@code
 * src/test/resources/dev/kvcache/codec/BlockDecoderFuzzTestInputs/} (committed test vectors, and
 * any input a fuzzing run found). To fuzz, as {@code .ci/run} does for 30 seconds:
 *
 * <pre>
 * JAZZER_FUZZ=1 ./mvnw -pl kvcache-core test -Dtest=BlockDecoderFuzzTest
 * JAZZER_FUZZ=1 JAZZER_MAX_DURATION=1h ./mvnw -pl kvcache-core test -Dtest=BlockDecoderFuzzTest
 * </pre>
 *
 * <p>The property: whatever the bytes, the buffer decoder, the parallel buffer decoder and the
 * channel decoder either all fail with a {@link CorruptBlockException} (leaving positions
 * unchanged) or all succeed with the same bytes; no other exception, no read out of bounds.
 */
@Tag("fuzz")
class BlockDecoderFuzzTest {

  /** Containers claiming more than this are only checked to fail cleanly against a small buffer. */
  private static final int MAX_DECODED = 1 << 20;

  @FuzzTest(maxDuration = "30s")
  void decodingNeverMisbehaves(byte[] input) throws Exception {
    long length;
    try {
      length = BlockCodec.decodedLength(ByteBuffer.wrap(input));
    } catch (CorruptBlockException e) {
      assertFailsCleanly(input, 16);
      return;
    }
    if (length > MAX_DECODED) {
      Throwable t = catchThrowable(() -> BlockCodec.decode(ByteBuffer.wrap(input), ByteBuffer.allocate(16)));
      assertThat(t).isInstanceOfAny(CorruptBlockException.class, IllegalArgumentException.class);
      return;
    }
    int n = (int) length;
    ByteBuffer src = ByteBuffer.wrap(input);
    ByteBuffer one = ByteBuffer.allocate(n);
    Throwable bufferFailure = catchThrowable(() -> BlockCodec.decode(src, one));
    ByteBuffer parallel = ByteBuffer.allocate(n);
    Throwable parallelFailure =
        catchThrowable(() -> BlockCodec.decode(ByteBuffer.wrap(input), parallel, Runnable::run, 3));
    ByteBuffer streamed = ByteBuffer.allocate(n);
    Throwable channelFailure = catchThrowable(() -> BlockCodec.decode(
        Channels.newChannel(new ByteArrayInputStream(input)), streamed));

    if (bufferFailure == null) {
      assertThat(parallelFailure).isNull();
      assertThat(channelFailure).isNull();
      assertThat(one.position()).isEqualTo(n);
      assertThat(parallel.flip()).isEqualTo(one.flip());
      assertThat(streamed.flip()).isEqualTo(one);
    } else {
      assertThat(bufferFailure).isInstanceOf(CorruptBlockException.class);
      assertThat(parallelFailure).isInstanceOf(CorruptBlockException.class);
      assertThat(channelFailure).isInstanceOf(CorruptBlockException.class);
      assertThat(src.position()).isZero();
      assertThat(one.position()).isZero();
    }
  }

  private static void assertFailsCleanly(byte[] input, int room) {
    ByteBuffer src = ByteBuffer.wrap(input);
    Throwable t = catchThrowable(() -> BlockCodec.decode(src, ByteBuffer.allocate(room)));
    assertThat(t).isInstanceOf(CorruptBlockException.class);
    assertThat(src.position()).isZero();
    Throwable s = catchThrowable(() -> BlockCodec.decode(
        Channels.newChannel(new ByteArrayInputStream(input)), ByteBuffer.allocate(room)));
    assertThat(s).isInstanceOf(CorruptBlockException.class);
  }
}
