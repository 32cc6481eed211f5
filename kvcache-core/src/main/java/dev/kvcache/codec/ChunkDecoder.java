package dev.kvcache.codec;

import static dev.kvcache.internal.codec.ContainerLayout.CHUNK_CRC_OFFSET;
import static dev.kvcache.internal.codec.ContainerLayout.CHUNK_HEADER_BYTES;
import static dev.kvcache.internal.codec.ContainerLayout.CHUNK_MODE_OFFSET;
import static dev.kvcache.internal.codec.ContainerLayout.CHUNK_RAW_LENGTH_OFFSET;
import static dev.kvcache.internal.codec.ContainerLayout.CHUNK_RESERVED_OFFSET;
import static dev.kvcache.internal.codec.ContainerLayout.CHUNK_STORED_LENGTH_OFFSET;
import static dev.kvcache.internal.codec.ContainerLayout.MODE_LZ4;
import static dev.kvcache.internal.codec.ContainerLayout.MODE_RAW;

import dev.kvcache.codec.CorruptBlockException.Reason;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;
import net.jpountz.lz4.LZ4Exception;

/**
 * Checks and decodes the chunks of one container, one at a time: a chunk header is read and
 * checked against the container's header ({@link #readChunkHeader}), then its payload decoded in
 * place and checked against its CRC32C ({@link #decodeChunk}). Not thread-safe: one per thread.
 */
final class ChunkDecoder {
  private final ContainerHeader header;
  private final CodecBuffers.FilterBuffers scratch;
  private final CRC32C crc = new CRC32C();
  private int rawLength;
  private int stored;
  private int mode;
  private int expectedCrc;

  ChunkDecoder(ContainerHeader header) {
    this.header = header;
    this.scratch = header.filter() == Filter.NONE
        ? null : CodecBuffers.filterBuffers(header.largestChunk());
  }

  /** Reads and checks the chunk header at {@code at}; returns the stored length. */
  int readChunkHeader(ByteBuffer src, int at, int index, long offset)
      throws CorruptBlockException {
    ByteBuffer h = src.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    rawLength = h.getInt(at + CHUNK_RAW_LENGTH_OFFSET);
    stored = h.getInt(at + CHUNK_STORED_LENGTH_OFFSET);
    mode = h.get(at + CHUNK_MODE_OFFSET) & 0xff;
    expectedCrc = h.getInt(at + CHUNK_CRC_OFFSET);
    long expectedRaw =
        index < header.chunkCount() - 1
            ? header.chunkSize()
            : header.rawLength() - (long) header.chunkSize() * (header.chunkCount() - 1);
    if (rawLength != expectedRaw) {
      throw new CorruptBlockException(Reason.LENGTH_OUT_OF_BOUNDS, index, offset,
          "chunk says " + rawLength + " raw bytes, the header implies " + expectedRaw);
    }
    if (mode != MODE_RAW && mode != MODE_LZ4
        || h.get(at + CHUNK_RESERVED_OFFSET) != 0
        || h.get(at + CHUNK_RESERVED_OFFSET + 1) != 0
        || h.get(at + CHUNK_RESERVED_OFFSET + 2) != 0) {
      throw new CorruptBlockException(Reason.BAD_HEADER, index, offset,
          "unknown chunk mode " + mode + " or reserved bits set");
    }
    int maxStored = mode == MODE_RAW ? rawLength : Lz4.maxCompressedLength(rawLength);
    if (stored < 0 || stored > maxStored || (mode == MODE_RAW && stored != rawLength)) {
      throw new CorruptBlockException(Reason.LENGTH_OUT_OF_BOUNDS, index, offset,
          "stored length " + stored + " is impossible for " + rawLength + " raw bytes in mode "
              + mode);
    }
    return stored;
  }

  /** Decodes the chunk whose header is at {@code at} into {@code dst} at {@code out}. */
  int decodeChunk(ByteBuffer src, int at, ByteBuffer dst, int out, int index, long offset)
      throws CorruptBlockException {
    int payload = at + CHUNK_HEADER_BYTES;
    if (mode == MODE_RAW) {
      dst.put(out, src, payload, rawLength);
    } else {
      ByteBuffer target = scratch == null ? dst : scratch.filteredView;
      int targetOff = scratch == null ? out : 0;
      int n;
      try {
        n = Lz4.DECOMPRESSOR.decompress(src, payload, stored, target, targetOff, rawLength);
      } catch (LZ4Exception e) {
        throw new CorruptBlockException(Reason.SIZE_MISMATCH, index, offset,
            "LZ4 data is malformed or decodes past " + rawLength + " bytes: " + e.getMessage());
      }
      if (n != rawLength) {
        throw new CorruptBlockException(Reason.SIZE_MISMATCH, index, offset,
            "LZ4 data decodes to " + n + " bytes, the chunk says " + rawLength);
      }
      if (scratch != null) {
        dst.put(out, scratch.remove(header.filter(), rawLength), 0, rawLength);
      }
    }
    crc.reset();
    crc.update(src.slice(at, CHUNK_CRC_OFFSET));
    crc.update(dst.slice(out, rawLength));
    if ((int) crc.getValue() != expectedCrc) {
      throw new CorruptBlockException(Reason.CHECKSUM_MISMATCH, index, offset,
          String.format("chunk checksum 0x%08x, computed 0x%08x over its %d decoded bytes",
              expectedCrc, (int) crc.getValue(), rawLength));
    }
    return rawLength;
  }
}
