package dev.kvcache.disk.internal;

/**
 * Byte layout of the metadata journal (format version 2; version 1 is read too) and of index
 * checkpoints (version 1). All integers are little-endian; CRC32C is {@link
 * java.util.zip.CRC32C}. {@code docs/disk-format.md} is the specification and {@code
 * RecordLayoutTest} pins these numbers.
 *
 * <pre>
 * journal file (journal-&lt;generation as 16 hex digits&gt;.kvj) = file header, entry, entry, ...
 *
 * file header (64 bytes)
 *   0  u32  magic          "kvjl" (6b 76 6a 6c)
 *   4  u8   version        2 (1: written before sync entries and flags; read as all confirmed)
 *   5  u8[3] reserved      0
 *   8  u64  generation     also in the file name; a checkpoint names the first generation to replay
 *  16  u8[44] reserved     0
 *  60  u32  headerCrc      CRC32C of bytes 0..59
 *
 * entry (64 bytes)
 *   0  u8   type           1 = put, 2 = delete, 3 = super-block dropped, 4 = sync
 *   1  u8   encoding       put: the record's encoding (see RecordLayout)
 *   2  u16  flags          put: bit 0 = the record was on the device before this entry was
 *                          written (sync policy always); 0 otherwise
 *   4  u32  superBlockId   put, drop
 *   8  u64  sequence       put, delete: the record's sequence number; sync: the journal offset
 *                          below which every entry's record was on the device when this entry
 *                          was written
 *  16  u64  keyHi          put, delete
 *  24  u64  keyLo
 *  32  u32  payloadOffset  put: where the payload starts in the super-block file
 *  36  u32  storedLength   put
 *  40  u32  rawLength      put
 *  44  u32  payloadCrc     put
 *  48  u32  hits           checkpoint entries: reads since the block was written; 0 in the journal
 *  52  u8[8] reserved      0
 *  60  u32  entryCrc       CRC32C of bytes 0..59
 *
 * checkpoint file (index.kvx) = file header, entry[entryCount] (puts only), trailer
 *
 * file header (64 bytes)
 *   0  u32  magic          "kvcp" (6b 76 63 70)
 *   4  u8   version        1
 *   5  u8[3] reserved      0
 *   8  u64  nextGeneration the first journal generation not covered by this checkpoint
 *  16  u64  maxSequence    the highest sequence number handed out so far
 *  24  u64  entryCount
 *  32  u8[28] reserved     0
 *  60  u32  headerCrc      CRC32C of bytes 0..59
 *
 * trailer (64 bytes)
 *   0  u32  magic          "kvce" (6b 76 63 65)
 *   4  u32  entriesCrc     CRC32C of all entry bytes
 *   8  u8[52] reserved     0
 *  60  u32  trailerCrc     CRC32C of bytes 0..59
 * </pre>
 *
 * <p>A checkpoint is written to a temporary file, forced, and renamed over the old one, so a reader
 * finds either the old or the new checkpoint, whole; the records it names are forced before it is
 * renamed. A journal is only appended to; an entry whose checksum fails, or that is cut short,
 * ends the journal (a torn tail after a crash). A put entry may reach the device before its
 * record does (the journal is forced for other entries, or by the periodic sync, while the record
 * is still being forced): such a put is <em>unconfirmed</em>, and a reader checks its record's
 * checksum and passes it by if the record did not survive, keeping the key's earlier location. A
 * put is confirmed by its flag, or by a later sync entry whose offset is past it.
 */
public final class JournalLayout {

  public static final int JOURNAL_MAGIC = 0x6c6a766b; // "kvjl" read little-endian
  public static final int CHECKPOINT_MAGIC = 0x7063766b; // "kvcp"
  public static final int TRAILER_MAGIC = 0x6563766b; // "kvce"
  /** The journal format written; version 1 is read as well. */
  public static final int JOURNAL_VERSION = 2;
  /** The checkpoint format written and read. */
  public static final int CHECKPOINT_VERSION = 1;

  public static final int FILE_HEADER_BYTES = 64;
  public static final int ENTRY_BYTES = 64;

  public static final int MAGIC_OFFSET = 0;
  public static final int VERSION_OFFSET = 4;
  public static final int GENERATION_OFFSET = 8;
  public static final int MAX_SEQUENCE_OFFSET = 16;
  public static final int ENTRY_COUNT_OFFSET = 24;
  public static final int ENTRIES_CRC_OFFSET = 4;
  public static final int CRC_OFFSET = 60;

  public static final int TYPE_OFFSET = 0;
  public static final int ENCODING_OFFSET = 1;
  public static final int FLAGS_OFFSET = 2;
  public static final int SUPER_BLOCK_OFFSET = 4;
  public static final int SEQUENCE_OFFSET = 8;
  public static final int KEY_HI_OFFSET = 16;
  public static final int KEY_LO_OFFSET = 24;
  public static final int PAYLOAD_OFFSET_OFFSET = 32;
  public static final int STORED_LENGTH_OFFSET = 36;
  public static final int RAW_LENGTH_OFFSET = 40;
  public static final int PAYLOAD_CRC_OFFSET = 44;
  public static final int HITS_OFFSET = 48;

  public static final int TYPE_PUT = 1;
  public static final int TYPE_DELETE = 2;
  public static final int TYPE_DROP = 3;
  public static final int TYPE_SYNC = 4;

  /** Flag of a put entry: its record was on the device before the entry was written. */
  public static final int FLAG_RECORD_DURABLE = 1;

  private JournalLayout() {}
}
