package dev.kvcache.codec;

import static dev.kvcache.internal.codec.ContainerLayout.CHUNK_HEADER_BYTES;

import java.nio.ByteBuffer;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The codec's reusable memory: per thread, the heap arrays a filter works in; shared, the direct
 * buffers of one chunk that channel encoding and decoding, encoders and decoders read and write
 * through. Extra memory stays bounded by chunks, never by payloads.
 */
final class CodecBuffers {

  /** Chunks up to this size keep their buffers in the pool. */
  private static final int MAX_POOLED_CHUNK_BYTES = 4 << 20;
  private static final int MAX_CACHED_SCRATCH_BYTES = 4 << 20;
  /** Chunk buffer pairs kept for channel encoding and decoding, encoders and decoders. */
  private static final int POOLED_CHUNK_BUFFERS = 8;
  private static final Queue<ChunkBuffers> CHUNK_BUFFERS = new ConcurrentLinkedQueue<>();
  private static final ThreadLocal<FilterBuffers> SCRATCH = new ThreadLocal<>();

  private CodecBuffers() {}

  /**
   * This thread's filter buffers, at least {@code bytes} long, reused across calls for chunks up
   * to 4 MiB, so extra memory is bounded by (threads using the codec) x 8 MiB; larger chunks get
   * buffers of their own per call.
   */
  static FilterBuffers filterBuffers(int bytes) {
    if (bytes > MAX_CACHED_SCRATCH_BYTES) {
      return new FilterBuffers(bytes); // rare chunk sizes are not kept per thread
    }
    FilterBuffers b = SCRATCH.get();
    if (b == null || b.plain.length < bytes) {
      b = new FilterBuffers(bytes);
      SCRATCH.set(b);
    }
    return b;
  }

  /**
   * A raw and an encoded chunk buffer for chunks of up to {@code rawBytes}: from a pool shared by
   * all codecs (an encoder or decoder may be fed and closed on different threads, so not per
   * thread), or new if none there fits, so that a put through a channel usually allocates no
   * direct memory. The pool keeps at most {@value #POOLED_CHUNK_BUFFERS} pairs, none for chunks
   * over 4 MiB. Give them back with {@link #giveBack}.
   */
  static ChunkBuffers takeChunkBuffers(int rawBytes) {
    ChunkBuffers pooled = CHUNK_BUFFERS.poll();
    if (pooled != null) {
      if (pooled.fits(rawBytes)) {
        pooled.raw.clear();
        pooled.encoded.clear();
        return pooled;
      }
      CHUNK_BUFFERS.offer(pooled);
    }
    return new ChunkBuffers(Math.max(rawBytes, BlockCodec.DEFAULT_CHUNK_BYTES));
  }

  static void giveBack(ChunkBuffers buffers) {
    if (buffers.raw.capacity() <= MAX_POOLED_CHUNK_BYTES
        && CHUNK_BUFFERS.size() < POOLED_CHUNK_BUFFERS) {
      CHUNK_BUFFERS.offer(buffers);
    }
  }

  /** Direct buffers for one chunk at a time: its raw bytes, and its encoded form and header. */
  static final class ChunkBuffers {
    final ByteBuffer raw;
    final ByteBuffer encoded;

    ChunkBuffers(int rawBytes) {
      raw = ByteBuffer.allocateDirect(rawBytes);
      encoded = ByteBuffer.allocateDirect(CHUNK_HEADER_BYTES + Lz4.maxCompressedLength(rawBytes));
    }

    boolean fits(int rawBytes) {
      return raw.capacity() >= rawBytes;
    }
  }

  /** A chunk's bytes before and after the filter, as heap arrays the filters work on. */
  static final class FilterBuffers {
    final byte[] plain;
    final byte[] filtered;
    final ByteBuffer plainView;
    final ByteBuffer filteredView;

    FilterBuffers(int bytes) {
      plain = new byte[bytes];
      filtered = new byte[bytes];
      plainView = ByteBuffer.wrap(plain);
      filteredView = ByteBuffer.wrap(filtered);
    }

    /**
     * Filters the chunk of {@code len} bytes held in {@link #plain} (which may be overwritten);
     * returns a view of the filtered bytes.
     */
    ByteBuffer apply(Filter filter, int len) {
      return filter.apply(plain, len, filtered) == plain ? plainView : filteredView;
    }

    /**
     * Reverses the filter on the chunk of {@code len} bytes held in {@link #filtered} (which may
     * be overwritten); returns the array holding the chunk's bytes.
     */
    byte[] remove(Filter filter, int len) {
      return filter.remove(filtered, len, plain);
    }
  }
}
