package dev.kvcache.server.s3;

import dev.kvcache.BlockKey;
import dev.kvcache.Namespace;
import dev.kvcache.s3api.auth.Hashes;
import dev.kvcache.s3api.body.ChecksumAlgorithm;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What the cache keeps of an object besides its bytes, and how: one block holds the object's
 * bytes, then this record, then its length and a mark ({@link #FOOTER_BYTES}). The block's CRC32C,
 * which every tier keeps and checks, covers the record too, so what a GET answers about an object
 * (its ETag, time, headers and checksum) is checked as its bytes are. An empty object is a block
 * of its record alone.
 *
 * <p>The record, big-endian, each text a 2-byte length (0xffff for none) and UTF-8: a version
 * byte (1); the object's length (8 bytes) and CRC32C (4); its time in milliseconds since 1970 (8);
 * its key; the algorithm of the checksum its client sent (a byte: 0 for none, else 1 + its {@link
 * ChecksumAlgorithm} ordinal) and that checksum; the count of its headers (2 bytes) and each one's
 * name and value.
 *
 * @param key the object's key
 * @param length the object's length in bytes
 * @param crc32c the CRC32C of the object's bytes (its ETag's)
 * @param lastModified when it was stored
 * @param checksumAlgorithm the checksum its client sent with it, or null for none
 * @param checksum that checksum, as S3 writes it, or null
 * @param headers the headers it was stored with and a GET gives back ({@link #KEPT_HEADERS} and
 *     {@code x-amz-meta-*}), by lower-case name
 */
record StoredObject(String key, long length, int crc32c, Instant lastModified,
    ChecksumAlgorithm checksumAlgorithm, String checksum, Map<String, String> headers) {

  /** The headers of a PUT an object keeps, besides its {@code x-amz-meta-*}, as S3 keeps them. */
  static final List<String> KEPT_HEADERS = List.of("content-type", "content-encoding",
      "content-disposition", "content-language", "cache-control", "expires",
      "x-amz-website-redirect-location");

  /** The record's length and the mark that ends every object's block. */
  static final int FOOTER_BYTES = 8;

  /** "kvS3": the last four bytes of an object's block. */
  private static final int MARK = 0x6b765333;

  private static final int VERSION = 1;

  /** The most bytes of {@code x-amz-meta-*} names and values an object may have, as S3 allows. */
  static final int MAX_USER_METADATA_BYTES = 2048;

  StoredObject {
    headers = Collections.unmodifiableMap(new LinkedHashMap<>(headers));
  }

  /** Its {@code Content-Type}, or null. */
  String contentType() {
    return headers.get("content-type");
  }

  /**
   * The record's length in bytes, with its footer: what the block holds besides the object. A
   * record is written at the end of its body, when its checksum is known, so its length is
   * computed before: the checksum is counted at its algorithm's length.
   */
  static int recordBytes(String key, ChecksumAlgorithm checksumAlgorithm,
      Map<String, String> headers) {
    int n = 1 + 8 + 4 + 8 + text(key) + 1
        + 2 + (checksumAlgorithm == null ? 0 : checksumAlgorithm.base64Length()) + 2;
    for (Map.Entry<String, String> e : headers.entrySet()) {
      n += text(e.getKey()) + text(e.getValue());
    }
    return n + FOOTER_BYTES;
  }

  /** This record, with its footer, to follow the object's bytes in its block. */
  byte[] encode() {
    int n = recordBytes(key, checksumAlgorithm, headers);
    if (checksumAlgorithm != null && checksum.length() != checksumAlgorithm.base64Length()) {
      throw new IllegalArgumentException("a " + checksumAlgorithm + " checksum is "
          + checksumAlgorithm.base64Length() + " characters long, not " + checksum.length());
    }
    ByteBuffer out = ByteBuffer.allocate(n);
    out.put((byte) VERSION).putLong(length).putInt(crc32c).putLong(lastModified.toEpochMilli());
    putText(out, key);
    out.put((byte) (checksumAlgorithm == null ? 0 : 1 + checksumAlgorithm.ordinal()));
    putText(out, checksumAlgorithm == null ? null : checksum);
    out.putShort((short) headers.size());
    for (Map.Entry<String, String> e : headers.entrySet()) {
      putText(out, e.getKey());
      putText(out, e.getValue());
    }
    out.putInt(n - FOOTER_BYTES).putInt(MARK);
    return out.array();
  }

  /**
   * The record at the end of {@code block}, the whole of an object's block.
   *
   * @throws IllegalArgumentException if the block does not end in an object's record
   */
  static StoredObject decode(ByteBuffer block) {
    int end = block.limit();
    if (end - block.position() < FOOTER_BYTES || block.getInt(end - 4) != MARK) {
      throw new IllegalArgumentException("the block does not end in an object's record");
    }
    int n = block.getInt(end - FOOTER_BYTES);
    int start = end - FOOTER_BYTES - n;
    if (n < 0 || start < block.position()) {
      throw new IllegalArgumentException("an object's record of " + n + " bytes in a block of "
          + (end - block.position()));
    }
    ByteBuffer in = block.duplicate().position(start).limit(end - FOOTER_BYTES);
    try {
      int version = in.get();
      if (version != VERSION) {
        throw new IllegalArgumentException("an object's record of version " + version
            + "; this server reads version " + VERSION);
      }
      long length = in.getLong();
      int crc = in.getInt();
      Instant time = Instant.ofEpochMilli(in.getLong());
      String key = text(in);
      int algorithm = in.get();
      String checksum = text(in);
      int count = Short.toUnsignedInt(in.getShort());
      Map<String, String> headers = new LinkedHashMap<>();
      for (int i = 0; i < count; i++) {
        headers.put(text(in), text(in));
      }
      if (in.hasRemaining() || length != start - block.position() || algorithm < 0
          || algorithm > ChecksumAlgorithm.values().length) {
        throw new IllegalArgumentException("an object's record that does not fit its block");
      }
      return new StoredObject(key, length, crc, time,
          algorithm == 0 ? null : ChecksumAlgorithm.values()[algorithm - 1], checksum, headers);
    } catch (BufferUnderflowException e) {
      throw new IllegalArgumentException("an object's record cut short", e);
    }
  }

  /** Its ETag: its CRC32C and length in hex, quoted. */
  String etag() {
    return etag(crc32c, length);
  }

  /** An object's ETag, from its CRC32C and length. */
  static String etag(int crc32c, long length) {
    return "\"" + String.format(Locale.ROOT, "%08x", crc32c) + Long.toHexString(length) + "\"";
  }

  /**
   * Whether {@code condition}, an {@code If-Match} or {@code If-None-Match} value (ETags, quoted
   * or not, separated by commas, or {@code *}), names {@code etag}.
   */
  static boolean matches(String condition, String etag) {
    String bare = unquoted(etag);
    for (String c : condition.split(",")) {
      String e = unquoted(c.strip().startsWith("W/") ? c.strip().substring(2) : c);
      if (e.equals("*") || e.equals(bare)) {
        return true;
      }
    }
    return false;
  }

  private static String unquoted(String etag) {
    String e = etag.strip();
    return e.length() >= 2 && e.startsWith("\"") && e.endsWith("\"")
        ? e.substring(1, e.length() - 1) : e;
  }

  /**
   * The block object {@code name} is kept in: under a SHA-256 of its name (a domain of its own,
   * apart from the keys of the server's own API), in its bucket's namespace.
   */
  static BlockKey blockKey(Namespace namespace, String name) {
    MessageDigest d = Hashes.newSha256();
    d.update(OBJECT_DOMAIN);
    return BlockKey.ofRaw(namespace, d.digest(name.getBytes(StandardCharsets.UTF_8)));
  }

  private static final byte[] OBJECT_DOMAIN =
      "kvcache S3 object\0".getBytes(StandardCharsets.US_ASCII);

  /** The length of a text that is absent (null), apart from an empty one. */
  private static final int NO_TEXT = 0xffff;

  private static int text(String s) {
    return 2 + (s == null ? 0 : s.getBytes(StandardCharsets.UTF_8).length);
  }

  private static void putText(ByteBuffer out, String s) {
    if (s == null) {
      out.putShort((short) NO_TEXT);
      return;
    }
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    if (b.length >= NO_TEXT) {
      throw new IllegalArgumentException("a text of " + b.length + " bytes in an object's record");
    }
    out.putShort((short) b.length).put(b);
  }

  private static String text(ByteBuffer in) {
    int n = Short.toUnsignedInt(in.getShort());
    if (n == NO_TEXT) {
      return null;
    }
    byte[] b = new byte[n];
    in.get(b);
    return new String(b, StandardCharsets.UTF_8);
  }
}
