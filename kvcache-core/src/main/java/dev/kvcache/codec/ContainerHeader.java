package dev.kvcache.codec;

import static dev.kvcache.internal.codec.ContainerLayout.*;

import dev.kvcache.codec.CorruptBlockException.Reason;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * A container's header, read and checked ({@link #read}: the magic, the version, its checksum, a
 * known filter, no reserved bit set, a chunk size in bounds and a chunk count that fits the
 * length), or written ({@link #write}): the one place that reads, writes and validates it, as
 * Lucene's {@code CodecUtil} does for its files' headers. The byte layout is {@code
 * ContainerLayout}'s.
 */
record ContainerHeader(Filter filter, int chunkSize, int chunkCount, long rawLength) {

  /**
   * Reads and checks the header at {@code at} in {@code src}: the magic, the version, its
   * checksum, a known filter, no reserved bit set, a chunk size in bounds, and a chunk count
   * that fits the length.
   *
   * @throws CorruptBlockException naming what is wrong
   */
  static ContainerHeader read(ByteBuffer src, int at) throws CorruptBlockException {
    if (src.limit() - at < HEADER_BYTES) {
      throw new CorruptBlockException(Reason.TRUNCATED, -1, 0,
          "a container starts with a 32-byte header, only " + Math.max(0, src.limit() - at)
              + " bytes are present");
    }
    ByteBuffer h = src.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    int magic = h.getInt(at + MAGIC_OFFSET);
    if (magic != MAGIC) {
      throw new CorruptBlockException(Reason.BAD_MAGIC, -1, 0,
          String.format("expected magic 0x%08x ('kvcz'), found 0x%08x", MAGIC, magic));
    }
    int version = h.get(at + VERSION_OFFSET) & 0xff;
    if (version != VERSION) {
      throw new CorruptBlockException(Reason.UNSUPPORTED_VERSION, -1, VERSION_OFFSET,
          "format version " + version + "; this reader knows version " + VERSION
              + (version > VERSION ? " (written by a newer kvcache)" : ""));
    }
    CRC32C crc = new CRC32C();
    crc.update(src.slice(at, HEADER_CRC_OFFSET));
    int expected = h.getInt(at + HEADER_CRC_OFFSET);
    if ((int) crc.getValue() != expected) {
      throw new CorruptBlockException(Reason.CHECKSUM_MISMATCH, -1, HEADER_CRC_OFFSET,
          String.format("header checksum 0x%08x, computed 0x%08x", expected, (int) crc.getValue()));
    }
    int filterId = h.get(at + FILTER_OFFSET) & 0xff;
    int elementSize = h.get(at + ELEMENT_SIZE_OFFSET) & 0xff;
    Filter filter = Filter.fromFormat(filterId, elementSize);
    if (filter == null) {
      throw new CorruptBlockException(Reason.BAD_HEADER, -1, FILTER_OFFSET,
          "unknown filter " + filterId + " with element size " + elementSize);
    }
    if (h.get(at + FLAGS_OFFSET) != 0 || h.getInt(at + HEADER_RESERVED_OFFSET) != 0) {
      throw new CorruptBlockException(Reason.BAD_HEADER, -1, FLAGS_OFFSET,
          "reserved header bits are set");
    }
    int chunkSize = h.getInt(at + CHUNK_SIZE_OFFSET);
    if (chunkSize < MIN_CHUNK_BYTES || chunkSize > MAX_CHUNK_BYTES) {
      throw new CorruptBlockException(Reason.BAD_HEADER, -1, CHUNK_SIZE_OFFSET,
          "chunk size " + chunkSize + " is outside " + MIN_CHUNK_BYTES + ".." + MAX_CHUNK_BYTES);
    }
    long rawLength = h.getLong(at + RAW_LENGTH_OFFSET);
    int chunkCount = h.getInt(at + CHUNK_COUNT_OFFSET);
    if (rawLength < 0 || rawLength > Integer.MAX_VALUE) {
      throw new CorruptBlockException(Reason.BAD_HEADER, -1, RAW_LENGTH_OFFSET,
          "raw length " + rawLength + " is larger than any block (at most 2^31 - 1 bytes)");
    }
    if (chunkCount < 0 || chunkCount(rawLength, chunkSize) != chunkCount) {
      throw new CorruptBlockException(Reason.BAD_HEADER, -1, RAW_LENGTH_OFFSET,
          "raw length " + rawLength + " does not need " + chunkCount + " chunks of " + chunkSize);
    }
    return new ContainerHeader(filter, chunkSize, chunkCount, rawLength);
  }

  /** The raw size of the largest chunk, which bounds every buffer a reader needs. */
  int largestChunk() {
    return (int) Math.min(chunkSize, rawLength);
  }

  /** @throws IllegalArgumentException if {@code dst} cannot take the decoded payload */
  void requireRoom(ByteBuffer dst) {
    if (dst.remaining() < rawLength) {
      throw new IllegalArgumentException(
          "destination has " + dst.remaining() + " bytes remaining, the block decodes to "
              + rawLength);
    }
  }

  /** Chunks of {@code chunkSize} a payload of {@code rawLength} bytes is cut into. */
  static long chunkCount(long rawLength, int chunkSize) {
    return (rawLength + chunkSize - 1) / chunkSize;
  }

  /**
   * Writes the container header for {@code rawLength} bytes in chunks of {@code chunkSize},
   * filtered by {@code filter}, at {@code at} in {@code dst}, its checksum last.
   */
  static void write(ByteBuffer dst, int at, Filter filter, int chunkSize, long rawLength) {
    ByteBuffer h = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    h.putInt(at + MAGIC_OFFSET, MAGIC);
    h.put(at + VERSION_OFFSET, (byte) VERSION);
    h.put(at + FILTER_OFFSET, (byte) filter.formatId());
    h.put(at + ELEMENT_SIZE_OFFSET, (byte) filter.elementSizeBytes());
    h.put(at + FLAGS_OFFSET, (byte) 0);
    h.putInt(at + CHUNK_SIZE_OFFSET, chunkSize);
    h.putInt(at + CHUNK_COUNT_OFFSET, (int) chunkCount(rawLength, chunkSize));
    h.putLong(at + RAW_LENGTH_OFFSET, rawLength);
    h.putInt(at + HEADER_RESERVED_OFFSET, 0);
    CRC32C crc = new CRC32C();
    crc.update(dst.slice(at, HEADER_CRC_OFFSET));
    h.putInt(at + HEADER_CRC_OFFSET, (int) crc.getValue());
  }

  /**
   * A container header that passed every check of {@link #read}: its filter, chunk size, chunk
   * count and the payload's length.
   */
}
