package dev.kvcache.disk.internal;

import static dev.kvcache.disk.internal.RecordLayout.*;

import dev.kvcache.BlockKey;
import dev.kvcache.Namespace;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

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

  /** The 64-byte header of a record, with the tag of the key's namespace, if it has one. */
  public static ByteBuffer header(int kind, int encoding, long sequence, BlockKey key,
      int rawLength, int storedLength, int payloadCrc) {
    return header(kind, encoding, sequence, key, key.namespace().map(Namespace::tag).orElse(0L),
        rawLength, storedLength, payloadCrc);
  }

  /** The 64-byte header of a record whose key's namespace has {@code namespaceTag} (0: none). */
  public static ByteBuffer header(int kind, int encoding, long sequence, BlockKey key,
      long namespaceTag, int rawLength, int storedLength, int payloadCrc) {
    ByteBuffer h = ByteBuffer.allocateDirect(HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    h.putInt(MAGIC_OFFSET, RECORD_MAGIC);
    h.put(VERSION_OFFSET, (byte) VERSION);
    h.put(KIND_OFFSET, (byte) kind);
    h.put(ENCODING_OFFSET, (byte) encoding);
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
