package dev.kvcache.disk.internal;

/**
 * Byte layout of a super-block file and of the block records in it, format version 1. All integers
 * are little-endian; CRC32C is {@link java.util.zip.CRC32C}. {@code docs/disk-format.md} is the
 * specification and {@code RecordLayoutTest} pins these numbers.
 *
 * <pre>
 * super-block file = file header (one 4 KiB page), records, zero padding
 *
 * file header (64 bytes at offset 0; the rest of the first page is zero)
 *   0  u32  magic          "kvsb" (6b 76 73 62)
 *   4  u8   version        1
 *   5  u8[3] reserved      0
 *   8  u32  superBlockId   also in the file name, sb-&lt;id as 8 hex digits&gt;.kvsb
 *  12  u32  reserved       0
 *  16  u64  sizeBytes      the file's size when created
 *  24  u64  createdMillis
 *  32  u64  owner          the tag of the namespace whose disk quota the file counts against
 *                          (Namespace.tag()); 0 for the files the others share, and before quotas
 *  40  u8[20] reserved     0
 *  60  u32  headerCrc      CRC32C of bytes 0..59
 *
 * record = header (64 bytes), payload (storedLength bytes), directly after it
 *   0  u32  magic          "kvrb" (6b 76 72 62)
 *   4  u8   version        1
 *   5  u8   kind           0 = block, 1 = tombstone (a delete; storedLength 0)
 *   6  u8   encoding       0 = raw bytes, 1 = a BlockCodec container (docs/codec-format.md),
 *                          2 = sealed (AES-256-GCM for its namespace: key id, nonce, ciphertext,
 *                          tag; payloadCrc is of these bytes, rawLength the block's)
 *   7  u8   tagUnits       the record's tag takes tagUnits · 64 bytes before the header; 0: none
 *   8  u64  sequence       order of puts and deletes in the directory; the highest wins
 *  16  u64  keyHi          the block key (namespace-salted, see docs/keys.md)
 *  24  u64  keyLo
 *  32  u32  rawLength      the block's length once decoded
 *  36  u32  storedLength   payload bytes that follow
 *  40  u32  payloadCrc     CRC32C of the payload as stored
 *  44  u32  namespaceHi    the namespace's tag (Namespace.tag()), high half; 0 if none
 *  48  u64  writtenMillis
 *  56  u32  namespaceLo    the tag's low half
 *  60  u32  headerCrc      CRC32C of bytes 0..59
 *
 * tag = what the tier's listener names the block by ({@code BlockTags}), directly before the header
 *   0  u32  magic          "kvtg" (6b 76 74 67)
 *   4  u32  length         tag bytes that follow
 *   8  u32  tagCrc         CRC32C of keyHi, keyLo, sequence (as in the header) and the tag bytes
 *  12  u8[length] tag      then zero padding up to tagUnits · 64 bytes
 * </pre>
 *
 * <p>A record written before tags has tagUnits 0; a reader that does not know tags skips one as it
 * skips any bytes that are no header. The tag's checksum covers the record's key and sequence, so
 * a tag is never taken for another record's.
 *
 * <p>Placement: headers start on 64-byte boundaries. A record whose header and payload fit in one
 * page never crosses a page boundary; a larger record's payload starts on a page boundary, with its
 * header in the 64 bytes before it, so a read of the payload touches no page it does not need.
 */
public final class RecordLayout {

  public static final int FILE_MAGIC = 0x6273766b; // "kvsb" read little-endian
  public static final int RECORD_MAGIC = 0x6272766b; // "kvrb" read little-endian
  public static final int VERSION = 1;

  public static final int PAGE = 4096;
  public static final int FILE_HEADER_BYTES = 64;
  /** Records start after the first page, which holds the file header. */
  public static final int FIRST_RECORD_OFFSET = PAGE;

  public static final int FILE_MAGIC_OFFSET = 0;
  public static final int FILE_VERSION_OFFSET = 4;
  public static final int FILE_ID_OFFSET = 8;
  public static final int FILE_SIZE_OFFSET = 16;
  public static final int FILE_CREATED_OFFSET = 24;
  public static final int FILE_OWNER_OFFSET = 32;
  public static final int FILE_CRC_OFFSET = 60;

  public static final int HEADER_BYTES = 64;
  public static final int MAGIC_OFFSET = 0;
  public static final int VERSION_OFFSET = 4;
  public static final int KIND_OFFSET = 5;
  public static final int ENCODING_OFFSET = 6;
  public static final int TAG_UNITS_OFFSET = 7;
  public static final int SEQUENCE_OFFSET = 8;
  public static final int KEY_HI_OFFSET = 16;
  public static final int KEY_LO_OFFSET = 24;
  public static final int RAW_LENGTH_OFFSET = 32;
  public static final int STORED_LENGTH_OFFSET = 36;
  public static final int PAYLOAD_CRC_OFFSET = 40;
  public static final int NAMESPACE_HI_OFFSET = 44;
  public static final int WRITTEN_MILLIS_OFFSET = 48;
  public static final int NAMESPACE_LO_OFFSET = 56;
  public static final int HEADER_CRC_OFFSET = 60;

  public static final int TAG_MAGIC = 0x6774766b; // "kvtg" read little-endian
  public static final int TAG_LENGTH_OFFSET = 4;
  public static final int TAG_CRC_OFFSET = 8;
  public static final int TAG_HEADER_BYTES = 12;
  /** A tag's unit: tags take whole 64-byte units before the record's header. */
  public static final int TAG_UNIT = 64;

  public static final int KIND_BLOCK = 0;
  public static final int KIND_TOMBSTONE = 1;
  public static final int ENCODING_RAW = 0;
  public static final int ENCODING_CONTAINER = 1;
  /** A block sealed for its namespace ({@code dev.kvcache.seal.Sealer}'s layout). */
  public static final int ENCODING_SEALED = 2;

  private RecordLayout() {}

  /**
   * Where the payload of a record of {@code storedLength} bytes goes when the previous record ends
   * at {@code cursor}; its header is the 64 bytes before. A record with a tag of {@code n} bytes
   * ({@link #tagBytes}) goes where one without would after {@code cursor + n}: its tag fits
   * between the cursor and the header.
   */
  public static long payloadOffset(long cursor, long storedLength) {
    long header = alignUp(cursor, HEADER_BYTES);
    if (largerThanAPage(storedLength)) {
      return alignUp(header + HEADER_BYTES, PAGE);
    }
    if (header % PAGE + HEADER_BYTES + storedLength > PAGE) {
      header = alignUp(header, PAGE);
    }
    return header + HEADER_BYTES;
  }

  /** The bytes a tag of {@code length} bytes takes before its record's header: whole units. */
  public static int tagBytes(int length) {
    return length == 0 ? 0 : (int) alignUp(TAG_HEADER_BYTES + length, TAG_UNIT);
  }

  /** Whether a record of {@code storedLength} payload bytes and its header exceed a page. */
  public static boolean largerThanAPage(long storedLength) {
    return HEADER_BYTES + storedLength > PAGE;
  }

  public static long alignUp(long value, long alignment) {
    return (value + alignment - 1) / alignment * alignment;
  }
}
