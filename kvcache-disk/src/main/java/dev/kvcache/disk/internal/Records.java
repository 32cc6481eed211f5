package dev.kvcache.disk.internal;

import static dev.kvcache.disk.internal.RecordLayout.*;

import dev.kvcache.BlockKey;
import dev.kvcache.Namespace;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/** Writes record headers and walks the records of a super-block (see {@link RecordLayout}). */
public final class Records {

  /** What {@link #scan} finds. */
  public interface Visitor {
    /**
     * A record whose header is intact ({@link #payloadIntact} checks its payload). {@code
     * location.sequence} orders it. Tombstones have no payload.
     */
    void record(int kind, BlockKey key, Location location);
  }

  private Records() {}

  /**
   * The 64-byte header of a record, with the tag of the key's namespace, if it has one, and a tag
   * of {@code tagBytes} ({@link RecordLayout#tagBytes}) before it.
   */
  public static ByteBuffer header(int kind, int encoding, long sequence, BlockKey key,
      int rawLength, int storedLength, int payloadCrc, int tagBytes) {
    return header(kind, encoding, sequence, key, key.namespace().map(Namespace::tag).orElse(0L),
        rawLength, storedLength, payloadCrc, tagBytes);
  }

  /**
   * The 64-byte header of a record whose key's namespace has {@code namespaceTag} (0: none), with
   * a tag of {@code tagBytes} ({@link RecordLayout#tagBytes}, 0: none) before it.
   */
  public static ByteBuffer header(int kind, int encoding, long sequence, BlockKey key,
      long namespaceTag, int rawLength, int storedLength, int payloadCrc, int tagBytes) {
    ByteBuffer h = ByteBuffer.allocateDirect(HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    h.putInt(MAGIC_OFFSET, RECORD_MAGIC);
    h.put(VERSION_OFFSET, (byte) VERSION);
    h.put(KIND_OFFSET, (byte) kind);
    h.put(ENCODING_OFFSET, (byte) encoding);
    h.put(TAG_UNITS_OFFSET, (byte) (tagBytes / TAG_UNIT));
    h.putLong(SEQUENCE_OFFSET, sequence);
    h.putLong(KEY_HI_OFFSET, key.hi());
    h.putLong(KEY_LO_OFFSET, key.lo());
    h.putInt(RAW_LENGTH_OFFSET, rawLength);
    h.putInt(STORED_LENGTH_OFFSET, storedLength);
    h.putInt(PAYLOAD_CRC_OFFSET, payloadCrc);
    h.putInt(NAMESPACE_HI_OFFSET, (int) (namespaceTag >>> 32));
    h.putLong(WRITTEN_MILLIS_OFFSET, System.currentTimeMillis());
    h.putInt(NAMESPACE_LO_OFFSET, (int) namespaceTag);
    h.putInt(HEADER_CRC_OFFSET, SuperBlock.crc(h, 0, HEADER_CRC_OFFSET));
    return h;
  }

  /** The namespace tag in the header of the record whose payload is at {@code loc} (pinned). */
  public static long namespaceTag(SuperBlock sb, Location loc) {
    ByteBuffer h = sb.view();
    int at = loc.payloadOffset - HEADER_BYTES;
    return ((long) h.getInt(at + NAMESPACE_HI_OFFSET) << 32)
        | (h.getInt(at + NAMESPACE_LO_OFFSET) & 0xffffffffL);
  }

  /**
   * {@code key} with the namespace of the record at {@code loc} (pinned), if that namespace is
   * known in this JVM ({@link Namespace#ofTag}); as it is otherwise.
   */
  public static BlockKey withNamespace(BlockKey key, SuperBlock sb, Location loc) {
    return Namespace.ofTag(namespaceTag(sb, loc)).map(ns -> BlockKey.of(ns, key.hi(), key.lo()))
        .orElse(key);
  }

  /**
   * The tag of the record of {@code key} and {@code sequence} as it lies before the record's
   * header: {@link RecordLayout#tagBytes} bytes, checksummed with the key and sequence.
   */
  public static ByteBuffer tag(byte[] tag, BlockKey key, long sequence) {
    ByteBuffer t = ByteBuffer.allocateDirect(tagBytes(tag.length)).order(ByteOrder.LITTLE_ENDIAN);
    t.putInt(0, TAG_MAGIC);
    t.putInt(TAG_LENGTH_OFFSET, tag.length);
    t.putInt(TAG_CRC_OFFSET, tagCrc(key, sequence, ByteBuffer.wrap(tag)));
    t.put(TAG_HEADER_BYTES, tag);
    return t;
  }

  /**
   * The bytes the tag of the record of {@code key} at {@code loc} (pinned) takes before its header,
   * as they lie, if it has a tag and the tag is intact; null otherwise. The record's header is
   * taken as checked (the record is indexed).
   */
  public static ByteBuffer tagRegion(SuperBlock sb, BlockKey key, Location loc) {
    ByteBuffer h = sb.view();
    int header = loc.payloadOffset - HEADER_BYTES;
    int bytes = (h.get(header + TAG_UNITS_OFFSET) & 0xff) * TAG_UNIT;
    int at = header - bytes;
    if (bytes == 0 || at < FIRST_RECORD_OFFSET || h.getInt(at) != TAG_MAGIC) {
      return null;
    }
    int length = h.getInt(at + TAG_LENGTH_OFFSET);
    if (length < 1 || tagBytes(length) != bytes
        || h.getInt(at + TAG_CRC_OFFSET) != tagCrc(key, loc.sequence,
            h.slice(at + TAG_HEADER_BYTES, length))) {
      return null;
    }
    return h.slice(at, bytes);
  }

  /** Whether the header of the record at {@code loc} (pinned) says a tag lies before it. */
  public static boolean hasTag(SuperBlock sb, Location loc) {
    return sb.view().get(loc.payloadOffset - HEADER_BYTES + TAG_UNITS_OFFSET) != 0;
  }

  /** The tag of the record of {@code key} at {@code loc} (pinned), if it has an intact one. */
  public static byte[] tagOf(SuperBlock sb, BlockKey key, Location loc) {
    ByteBuffer region = tagRegion(sb, key, loc);
    if (region == null) {
      return null;
    }
    byte[] tag = new byte[region.order(ByteOrder.LITTLE_ENDIAN).getInt(TAG_LENGTH_OFFSET)];
    region.get(TAG_HEADER_BYTES, tag);
    return tag;
  }

  private static int tagCrc(BlockKey key, long sequence, ByteBuffer tag) {
    CRC32C crc = new CRC32C();
    crc.update(ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN).putLong(key.hi())
        .putLong(key.lo()).putLong(sequence).flip());
    crc.update(tag);
    return (int) crc.getValue();
  }

  /** CRC32C of {@code b}'s remaining bytes. */
  public static int crc(ByteBuffer b) {
    return SuperBlock.crc(b, b.position(), b.remaining());
  }

  /**
   * Whether the record of {@code key} at {@code loc} in {@code sb} (pinned) is whole: its header
   * intact and naming the key, sequence and length, and its payload matching its checksum. A
   * record whose payload survived a crash but whose header did not is not whole: scans, which
   * read headers, would not see it.
   */
  public static boolean whole(SuperBlock sb, BlockKey key, Location loc) {
    long header = (long) loc.payloadOffset - HEADER_BYTES;
    if (header < FIRST_RECORD_OFFSET
        || (long) loc.payloadOffset + loc.storedLength > sb.sizeBytes()) {
      return false;
    }
    ByteBuffer h = sb.view();
    int at = (int) header;
    return h.getInt(at + MAGIC_OFFSET) == RECORD_MAGIC
        && (h.get(at + VERSION_OFFSET) & 0xff) == VERSION
        && h.getInt(at + HEADER_CRC_OFFSET) == SuperBlock.crc(h, at, HEADER_CRC_OFFSET)
        && h.get(at + KIND_OFFSET) == KIND_BLOCK
        && h.getLong(at + KEY_HI_OFFSET) == key.hi() && h.getLong(at + KEY_LO_OFFSET) == key.lo()
        && h.getLong(at + SEQUENCE_OFFSET) == loc.sequence
        && h.getInt(at + STORED_LENGTH_OFFSET) == loc.storedLength
        && payloadIntact(sb, loc);
  }

  /** Whether the payload at {@code loc} in {@code sb} (pinned) matches its checksum. */
  public static boolean payloadIntact(SuperBlock sb, Location loc) {
    return crc(sb.slice(loc.payloadOffset, loc.storedLength)) == loc.payloadCrc;
  }

  /**
   * Walks the records of {@code sb} (pinned by the caller) from its first record up to {@code
   * limit}, skipping what is not an intact header 64 bytes at a time.
   *
   * @return the end of the last record with an intact header (the first record offset if none)
   */
  public static long scan(SuperBlock sb, long limit, Visitor visitor) {
    limit = Math.min(limit, sb.sizeBytes());
    long pos = FIRST_RECORD_OFFSET;
    long end = FIRST_RECORD_OFFSET;
    ByteBuffer h = sb.view(); // absolute reads: nothing is allocated per 64 bytes skipped
    while (pos + HEADER_BYTES <= limit) {
      int at = (int) pos;
      if (h.getInt(at + MAGIC_OFFSET) != RECORD_MAGIC
          || (h.get(at + VERSION_OFFSET) & 0xff) != VERSION
          || h.getInt(at + HEADER_CRC_OFFSET) != SuperBlock.crc(h, at, HEADER_CRC_OFFSET)) {
        pos += HEADER_BYTES;
        continue;
      }
      int kind = h.get(at + KIND_OFFSET);
      int stored = h.getInt(at + STORED_LENGTH_OFFSET);
      long payload = pos + HEADER_BYTES;
      if (stored < 0 || payload + stored > limit || (kind != KIND_BLOCK && kind != KIND_TOMBSTONE)) {
        pos += HEADER_BYTES;
        continue;
      }
      BlockKey key = BlockKey.of(h.getLong(at + KEY_HI_OFFSET), h.getLong(at + KEY_LO_OFFSET));
      Location loc = new Location(sb.id(), (int) payload, stored, h.getInt(at + RAW_LENGTH_OFFSET),
          h.getInt(at + PAYLOAD_CRC_OFFSET), h.get(at + ENCODING_OFFSET),
          h.getLong(at + SEQUENCE_OFFSET), 0);
      visitor.record(kind, key, loc);
      end = payload + stored;
      pos = alignUp(end, HEADER_BYTES);
    }
    return end;
  }
}
