package dev.kvcache.codec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.codec.CorruptBlockException.Reason;
import dev.kvcache.testkit.TestBytes;
import java.nio.ByteBuffer;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** Encoding and decoding on several threads give the same bytes as on one. */
class ParallelCodecTest {

  private static final int CHUNK = 16 << 10;
  private static final ExecutorService POOL = Executors.newFixedThreadPool(3);

  @AfterAll
  static void shutDown() {
    POOL.shutdownNow();
  }

  @Test
  void parallelEncodingWritesTheSameContainerAsSequential() throws Exception {
    for (Filter filter : Filter.values()) {
      for (int size : new int[] {CHUNK + 1, 2 * CHUNK, 7 * CHUNK + 99, 20 * CHUNK}) {
        ByteBuffer src = TestBytes.halfFloatsDirect(size, size);
        BlockCodec sequential = BlockCodecTest.codec(filter);
        BlockCodec parallel =
            BlockCodec.builder().chunkSizeBytes(CHUNK).filter(filter).executor(POOL, 4).build();
        ByteBuffer expected = BlockCodecTest.encode(sequential, src);
        ByteBuffer actual = BlockCodecTest.encode(parallel, src);
        assertThat(actual).as("%s, %d bytes", filter, size).isEqualTo(expected);

        ByteBuffer decoded = ByteBuffer.allocateDirect(size);
        BlockCodec.decode(actual, decoded, POOL, 3);
        assertThat(decoded.flip()).isEqualTo(src);
        assertThat(actual.hasRemaining()).isFalse();
      }
    }
  }

  @Test
  void parallelDecodingNamesTheDamagedChunk() {
    ByteBuffer src = TestBytes.randomDirect(9 * CHUNK, 3);
    ByteBuffer encoded = BlockCodecTest.encode(BlockCodecTest.codec(Filter.NONE), src);
    // random bytes are stored raw: chunk i starts at 32 + i * (16 + CHUNK)
    int chunk5 = 32 + 5 * (16 + CHUNK);
    encoded.put(chunk5 + 16 + 100, (byte) (encoded.get(chunk5 + 16 + 100) ^ 1));
    ByteBuffer dst = ByteBuffer.allocateDirect(9 * CHUNK);
    assertThatThrownBy(() -> BlockCodec.decode(encoded, dst, POOL, 3))
        .isInstanceOfSatisfying(CorruptBlockException.class, e -> {
          assertThat(e.reason()).isEqualTo(Reason.CHECKSUM_MISMATCH);
          assertThat(e.chunkIndex()).isEqualTo(5);
          assertThat(e.offset()).isEqualTo(chunk5);
        });
    assertThat(encoded.position()).isZero();
    assertThat(dst.position()).isZero();
  }

  @Test
  void threadSettingsAreValidated() {
    assertThatThrownBy(() -> BlockCodec.builder().executor(POOL, 0))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> BlockCodec.decode(ByteBuffer.allocate(32), ByteBuffer.allocate(0), POOL, 0))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void anEmptyContainerDecodesInParallel() throws Exception {
    ByteBuffer encoded = BlockCodecTest.encode(BlockCodecTest.codec(Filter.BYTE_SHUFFLE_2), ByteBuffer.allocate(0));
    BlockCodec.decode(encoded, ByteBuffer.allocate(0), POOL, 3);
    assertThat(encoded.hasRemaining()).isFalse();
  }

  @Test
  void callsFromThePoolsOwnThreadsDoNotDeadlock() throws Exception {
    ExecutorService small = Executors.newFixedThreadPool(2);
    try {
      ByteBuffer src = TestBytes.halfFloatsDirect(12 * CHUNK, 9);
      BlockCodec codec =
          BlockCodec.builder().chunkSizeBytes(CHUNK).filter(Filter.BYTE_SHUFFLE_2).executor(small, 2).build();
      ByteBuffer encoded = BlockCodecTest.encode(BlockCodecTest.codec(Filter.BYTE_SHUFFLE_2), src);
      java.util.List<java.util.concurrent.Future<ByteBuffer>> results = new java.util.ArrayList<>();
      for (int t = 0; t < 2; t++) { // both pool threads busy with calls that want helpers
        results.add(small.submit(() -> {
          ByteBuffer decoded = ByteBuffer.allocateDirect(12 * CHUNK);
          BlockCodec.decode(encoded.duplicate(), decoded, small, 2);
          BlockCodecTest.encode(codec, src);
          return decoded.flip();
        }));
      }
      for (java.util.concurrent.Future<ByteBuffer> result : results) {
        assertThat(result.get(30, java.util.concurrent.TimeUnit.SECONDS)).isEqualTo(src);
      }
    } finally {
      small.shutdownNow();
    }
  }

  @Test
  void aRejectingExecutorOnlyMeansTheCallerDoesTheWork() throws Exception {
    java.util.concurrent.Executor rejecting = task -> {
      throw new java.util.concurrent.RejectedExecutionException("full");
    };
    ByteBuffer src = TestBytes.halfFloatsDirect(5 * CHUNK + 7, 4);
    BlockCodec codec =
        BlockCodec.builder().chunkSizeBytes(CHUNK).filter(Filter.BYTE_SHUFFLE_2).executor(rejecting, 3).build();
    ByteBuffer encoded = BlockCodecTest.encode(codec, src);
    ByteBuffer decoded = ByteBuffer.allocate(src.remaining());
    BlockCodec.decode(encoded, decoded, rejecting, 3);
    assertThat(decoded.flip()).isEqualTo(src);
  }
}
