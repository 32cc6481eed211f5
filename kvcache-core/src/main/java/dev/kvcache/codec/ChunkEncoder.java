package dev.kvcache.codec;

import static dev.kvcache.internal.codec.ContainerLayout.CHUNK_CRC_OFFSET;
import static dev.kvcache.internal.codec.ContainerLayout.CHUNK_HEADER_BYTES;
import static dev.kvcache.internal.codec.ContainerLayout.CHUNK_MODE_OFFSET;
import static dev.kvcache.internal.codec.ContainerLayout.CHUNK_RAW_LENGTH_OFFSET;
import static dev.kvcache.internal.codec.ContainerLayout.CHUNK_RESERVED_OFFSET;
import static dev.kvcache.internal.codec.ContainerLayout.CHUNK_STORED_LENGTH_OFFSET;
import static dev.kvcache.internal.codec.ContainerLayout.MODE_LZ4;
import static dev.kvcache.internal.codec.ContainerLayout.MODE_RAW;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;
import net.jpountz.lz4.LZ4Compressor;
import net.jpountz.lz4.LZ4Exception;

/**
 * Writes one chunk of a container: filters it, compresses it if LZ4 shrinks it by the codec's
 * margin (probing large chunks with samples first), else stores it raw, and heads it with its
 * lengths, mode and CRC32C. Thread-safe: the filter works in the calling thread's buffers.
 */
final class ChunkEncoder {

  /** Chunks this large are probed with samples before compressing. */
  private static final int MIN_PROBED_CHUNK_BYTES = 64 << 10;
  private static final int MIN_PROBE_BYTES = 8 << 10;

  private final LZ4Compressor compressor = Lz4.compressor();
  private final Filter filter;
  private final int chunkSizeBytes;
  private final int minSavingsPercent;

  ChunkEncoder(Filter filter, int chunkSizeBytes, int minSavingsPercent) {
    this.filter = filter;
    this.chunkSizeBytes = chunkSizeBytes;
    this.minSavingsPercent = minSavingsPercent;
  }

  /**
   * Writes one chunk (header and payload) of the {@code len} bytes at {@code in} of {@code src} at
   * {@code out} in {@code dst}, through this thread's filter buffers; returns its size.
   */
  int encode(ByteBuffer src, int in, int len, ByteBuffer dst, int out, CRC32C crc) {
    CodecBuffers.FilterBuffers scratch =
        filter == Filter.NONE ? null : CodecBuffers.filterBuffers(chunkSizeBytes);
    int payload = out + CHUNK_HEADER_BYTES;
    int limit = len - (int) ((long) len * minSavingsPercent / 100);
    int stored = -1;
    try {
      if (len >= MIN_PROBED_CHUNK_BYTES
          && looksIncompressible(src, in, len, dst, payload, scratch)) {
        stored = -1; // skip filtering and compressing the rest
      } else if (scratch == null) {
        stored = compressor.compress(src, in, len, dst, payload, limit);
      } else {
        src.get(in, scratch.plain, 0, len);
        stored = compressor.compress(scratch.apply(filter, len), 0, len, dst, payload, limit);
      }
    } catch (LZ4Exception e) {
      stored = -1; // LZ4 gave up at the limit: store raw
    }
    int mode = MODE_LZ4;
    if (stored < 0) {
      dst.put(payload, src, in, len);
      stored = len;
      mode = MODE_RAW;
    }
    ByteBuffer h = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    h.putInt(out + CHUNK_RAW_LENGTH_OFFSET, len);
    h.putInt(out + CHUNK_STORED_LENGTH_OFFSET, stored);
    h.put(out + CHUNK_MODE_OFFSET, (byte) mode);
    h.put(out + CHUNK_RESERVED_OFFSET, (byte) 0);
    h.put(out + CHUNK_RESERVED_OFFSET + 1, (byte) 0);
    h.put(out + CHUNK_RESERVED_OFFSET + 2, (byte) 0);
    crc.reset();
    crc.update(dst.slice(out, CHUNK_CRC_OFFSET));
    crc.update(src.slice(in, len));
    h.putInt(out + CHUNK_CRC_OFFSET, (int) crc.getValue());
    return CHUNK_HEADER_BYTES + stored;
  }

  /**
   * Whether LZ4 cannot shrink any of the samples spread evenly over the chunk at {@code in} (an
   * eighth of it in all, in samples of at least 8 KiB so that repeats some kilobytes apart show),
   * each filtered and compressed on its own into {@code dst} at {@code at} (space the chunk's
   * payload overwrites later). Random or already-compressed data is caught this way at an eighth of
   * the chunk's work; data that compresses anywhere a sample falls is compressed whole.
   */
  private boolean looksIncompressible(ByteBuffer src, int in, int len, ByteBuffer dst, int at,
      CodecBuffers.FilterBuffers scratch) {
    int sample = Math.max(MIN_PROBE_BYTES, len / 128);
    int samples = Math.max(1, len / 8 / sample);
    for (int p = 0; p < samples; p++) {
      int from = in + (int) ((long) p * len / samples);
      try {
        if (scratch == null) {
          compressor.compress(src, from, sample, dst, at, sample - 1);
        } else {
          src.get(from, scratch.plain, 0, sample);
          compressor.compress(scratch.apply(filter, sample), 0, sample, dst, at, sample - 1);
        }
        return false; // this sample shrank
      } catch (LZ4Exception e) {
        // did not fit in fewer bytes than it has: try the next
      }
    }
    return true;
  }
}
