package dev.kvcache.codec;

import static dev.kvcache.internal.codec.ContainerLayout.CHUNK_HEADER_BYTES;

import dev.kvcache.codec.CorruptBlockException.Reason;
import dev.kvcache.internal.codec.SharedWork;
import java.nio.ByteBuffer;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.CRC32C;

/**
 * Encoding and decoding several chunks of one buffer at a time: the calling thread plus {@code
 * threads - 1} tasks on an executor take chunks as they free up, each chunk going straight to its
 * place, so extra memory is one chunk per thread (the filter's), never the payload.
 */
final class ParallelCodec {

  private ParallelCodec() {}

  /**
   * Encodes every chunk of {@code src}'s remaining bytes straight into its slot in {@code dst}
   * from {@code start}, the place it would take if every chunk before it were stored raw, then
   * slides the chunks down in order to close the gaps.
   *
   * @return the offset in {@code dst} just past the last chunk
   */
  static int encode(ChunkEncoder encoder, int chunkSize, ByteBuffer src, ByteBuffer dst,
      int start, Executor executor, int threads) {
    int first = src.position();
    int end = src.limit();
    int chunks = (int) ContainerHeader.chunkCount(end - first, chunkSize);
    int slot = CHUNK_HEADER_BYTES + chunkSize;
    int[] sizes = new int[chunks];
    SharedWork.run(executor, threads - 1, chunks, i -> {
      int in = first + i * chunkSize;
      int len = Math.min(chunkSize, end - in);
      sizes[i] = encoder.encode(src, in, len, dst, start + i * slot, new CRC32C());
    });
    int out = start;
    for (int i = 0; i < chunks; i++) {
      int at = start + i * slot;
      if (at != out) {
        dst.put(out, dst, at, sizes[i]); // a move to a lower offset: overlapping is fine
      }
      out += sizes[i];
    }
    return out;
  }

  /**
   * Decodes the chunks whose headers, already checked once, start at {@code chunkAt} (relative
   * to the container at {@code base}) into {@code dst} from {@code out}, each chunk's header
   * checked again by the thread that decodes it.
   *
   * @throws CorruptBlockException the first damage any thread found
   */
  static void decode(ContainerHeader header, ByteBuffer src, int base, int[] chunkAt,
      int[] storedAt, ByteBuffer dst, int out, Executor executor, int threads)
      throws CorruptBlockException {
    AtomicReference<CorruptBlockException> failure = new AtomicReference<>();
    ThreadLocal<ChunkDecoder> decoders = ThreadLocal.withInitial(() -> new ChunkDecoder(header));
    SharedWork.run(executor, threads - 1, chunkAt.length, i -> {
      if (failure.get() != null) {
        return;
      }
      ChunkDecoder decoder = decoders.get();
      long offset = chunkAt[i] - base;
      try {
        if (decoder.readChunkHeader(src, chunkAt[i], i, offset) != storedAt[i]) {
          throw new CorruptBlockException(Reason.LENGTH_OUT_OF_BOUNDS, i, offset,
              "the chunk header changed while the block was being decoded");
        }
        decoder.decodeChunk(src, chunkAt[i], dst, out + i * header.chunkSize(), i, offset);
      } catch (CorruptBlockException e) {
        failure.compareAndSet(null, e);
      }
    });
    if (failure.get() != null) {
      throw failure.get();
    }
  }
}
