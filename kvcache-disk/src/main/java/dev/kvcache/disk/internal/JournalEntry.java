package dev.kvcache.disk.internal;

import static dev.kvcache.disk.internal.JournalLayout.*;

import dev.kvcache.BlockKey;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** One 64-byte journal or checkpoint entry (see {@link JournalLayout}), encoded or decoded. */
public final class JournalEntry {

  public final int type;
  public final BlockKey key;
  public final int superBlockId;
  public final long sequence;
  /** For puts: the record's location; null otherwise. */
  public final Location location;
  /** For puts: whether the record was on the device before the entry was written. */
  public final boolean recordDurable;

  private JournalEntry(int type, BlockKey key, int superBlockId, long sequence, Location location,
      boolean recordDurable) {
    this.type = type;
    this.key = key;
    this.superBlockId = superBlockId;
    this.sequence = sequence;
    this.location = location;
    this.recordDurable = recordDurable;
  }

  /** A checkpoint's entry, or a put's whose record may not be on the device yet. */
  public static ByteBuffer put(BlockKey key, Location loc, int hits) {
    return put(key, loc, hits, false);
  }

  /** A put's entry; {@code recordDurable} if its record was forced before the entry is written. */
  public static ByteBuffer put(BlockKey key, Location loc, int hits, boolean recordDurable) {
    ByteBuffer e = ByteBuffer.allocate(ENTRY_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    e.put(TYPE_OFFSET, (byte) TYPE_PUT);
    e.put(ENCODING_OFFSET, (byte) loc.encoding);
    e.putShort(FLAGS_OFFSET, (short) (recordDurable ? FLAG_RECORD_DURABLE : 0));
    e.putInt(SUPER_BLOCK_OFFSET, loc.superBlockId);
    e.putLong(SEQUENCE_OFFSET, loc.sequence);
    e.putLong(KEY_HI_OFFSET, key.hi());
    e.putLong(KEY_LO_OFFSET, key.lo());
    e.putInt(PAYLOAD_OFFSET_OFFSET, loc.payloadOffset);
    e.putInt(STORED_LENGTH_OFFSET, loc.storedLength);
    e.putInt(RAW_LENGTH_OFFSET, loc.rawLength);
    e.putInt(PAYLOAD_CRC_OFFSET, loc.payloadCrc);
    e.putInt(HITS_OFFSET, hits);
    return seal(e);
  }

  public static ByteBuffer delete(BlockKey key, long sequence) {
    ByteBuffer e = ByteBuffer.allocate(ENTRY_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    e.put(TYPE_OFFSET, (byte) TYPE_DELETE);
    e.putLong(SEQUENCE_OFFSET, sequence);
    e.putLong(KEY_HI_OFFSET, key.hi());
    e.putLong(KEY_LO_OFFSET, key.lo());
    return seal(e);
  }

  /**
   * A sync entry: every entry before journal offset {@code covered} had its record on the device
   * when this entry was written.
   */
  public static ByteBuffer sync(long covered) {
    ByteBuffer e = ByteBuffer.allocate(ENTRY_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    e.put(TYPE_OFFSET, (byte) TYPE_SYNC);
    e.putLong(SEQUENCE_OFFSET, covered);
    return seal(e);
  }

  public static ByteBuffer drop(int superBlockId) {
    ByteBuffer e = ByteBuffer.allocate(ENTRY_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    e.put(TYPE_OFFSET, (byte) TYPE_DROP);
    e.putInt(SUPER_BLOCK_OFFSET, superBlockId);
    return seal(e);
  }

  private static ByteBuffer seal(ByteBuffer e) {
    e.putInt(CRC_OFFSET, SuperBlock.crc(e, 0, CRC_OFFSET));
    return e;
  }

  /**
   * Decodes the entry at {@code at}; null if its checksum fails or its type is unknown (a torn or
   * corrupt entry).
   */
  public static JournalEntry read(ByteBuffer b, int at) {
    ByteBuffer e = b.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    if (e.getInt(at + CRC_OFFSET) != SuperBlock.crc(e, at, CRC_OFFSET)) {
      return null;
    }
    int type = e.get(at + TYPE_OFFSET);
    BlockKey key = BlockKey.of(e.getLong(at + KEY_HI_OFFSET), e.getLong(at + KEY_LO_OFFSET));
    int sb = e.getInt(at + SUPER_BLOCK_OFFSET);
    long seq = e.getLong(at + SEQUENCE_OFFSET);
    switch (type) {
      case TYPE_PUT:
        Location loc = new Location(sb, e.getInt(at + PAYLOAD_OFFSET_OFFSET),
            e.getInt(at + STORED_LENGTH_OFFSET), e.getInt(at + RAW_LENGTH_OFFSET),
            e.getInt(at + PAYLOAD_CRC_OFFSET), e.get(at + ENCODING_OFFSET), seq,
            e.getInt(at + HITS_OFFSET));
        boolean durable = (e.getShort(at + FLAGS_OFFSET) & FLAG_RECORD_DURABLE) != 0;
        return new JournalEntry(type, key, sb, seq, loc, durable);
      case TYPE_DELETE:
      case TYPE_DROP:
      case TYPE_SYNC:
        return new JournalEntry(type, key, sb, seq, null, false);
      default:
        return null;
    }
  }
}
