package dev.kvcache.internal.codec;

/**
 * Byte layout of the block container, format version 1. All integers are little-endian.
 * {@code docs/codec-format.md} is the specification; bump {@link #VERSION} when anything here
 * changes, and keep the old reader.
 *
 * <pre>
 * container = header, chunk[chunkCount]
 *
 * header (32 bytes)
 *   0  u32  magic          "kvcz" (6b 76 63 7a)
 *   4  u8   version        1
 *   5  u8   filter         0 = none, 1 = byte shuffle, 2 = bit shuffle
 *   6  u8   elementSize    1 for no filter; 2 or 4 for byte shuffle; 1, 2 or 4 for bit shuffle
 *   7  u8   flags          0 (reserved)
 *   8  u32  chunkSize      raw bytes per chunk; every chunk but the last holds exactly this many
 *  12  u32  chunkCount     ceil(rawLength / chunkSize); 0 for an empty payload
 *  16  u64  rawLength      decoded size of the whole payload
 *  24  u32  reserved       0
 *  28  u32  headerCrc      CRC32C of bytes 0..27
 *
 * chunk header (16 bytes), followed by storedLength payload bytes
 *   0  u32  rawLength      decoded bytes of this chunk
 *   4  u32  storedLength   bytes that follow
 *   8  u8   mode           0 = stored raw (no filter), 1 = LZ4 block of the filtered bytes
 *   9  u8[3] reserved      0
 *  12  u32  chunkCrc       CRC32C of chunk header bytes 0..11, then of the chunk's decoded bytes
 * </pre>
 */
public final class ContainerLayout {

  public static final int MAGIC = 0x7a63766b; // "kvcz" read little-endian
  public static final int VERSION = 1;

  public static final int HEADER_BYTES = 32;
  public static final int MAGIC_OFFSET = 0;
  public static final int VERSION_OFFSET = 4;
  public static final int FILTER_OFFSET = 5;
  public static final int ELEMENT_SIZE_OFFSET = 6;
  public static final int FLAGS_OFFSET = 7;
  public static final int CHUNK_SIZE_OFFSET = 8;
  public static final int CHUNK_COUNT_OFFSET = 12;
  public static final int RAW_LENGTH_OFFSET = 16;
  public static final int HEADER_RESERVED_OFFSET = 24;
  public static final int HEADER_CRC_OFFSET = 28;

  public static final int CHUNK_HEADER_BYTES = 16;
  public static final int CHUNK_RAW_LENGTH_OFFSET = 0;
  public static final int CHUNK_STORED_LENGTH_OFFSET = 4;
  public static final int CHUNK_MODE_OFFSET = 8;
  public static final int CHUNK_RESERVED_OFFSET = 9;
  public static final int CHUNK_CRC_OFFSET = 12;

  public static final int MODE_RAW = 0;
  public static final int MODE_LZ4 = 1;

  public static final int FILTER_NONE = 0;
  public static final int FILTER_BYTE_SHUFFLE = 1;
  public static final int FILTER_BIT_SHUFFLE = 2;

  /** Smallest and largest chunk sizes a writer may choose and a reader accepts. */
  public static final int MIN_CHUNK_BYTES = 4 << 10;
  public static final int MAX_CHUNK_BYTES = 16 << 20;

  private ContainerLayout() {}
}
