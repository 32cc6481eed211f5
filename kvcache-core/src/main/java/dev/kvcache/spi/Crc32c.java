package dev.kvcache.spi;

import dev.kvcache.BlockLease;
import java.nio.ByteBuffer;
import java.util.Base64;
import java.util.OptionalInt;
import java.util.zip.CRC32C;

/**
 * A block's CRC32C (Castagnoli), computed, and written as S3 writes it (in its {@code
 * x-amz-checksum-crc32c} header, which kvcache-server's API takes over): the base64 of its four
 * bytes in big-endian order.
 */
public final class Crc32c {

  private Crc32c() {}

  /** The CRC32C of {@code bytes} from position to limit; the position does not move. */
  public static int of(ByteBuffer bytes) {
    CRC32C crc = new CRC32C();
    crc.update(bytes.duplicate());
    return (int) crc.getValue();
  }

  /**
   * The CRC32C of a leased block: the one its tier kept ({@link BlockLease#crc32c()}), or, for a
   * tier that keeps none, computed now from its bytes.
   */
  public static int of(BlockLease lease) {
    OptionalInt kept = lease.crc32c();
    return kept.isPresent() ? kept.getAsInt() : of(lease.bytes());
  }

  /** A checksum as the base64 of its four bytes, big-endian. */
  public static String toBase64(int crc32c) {
    return Base64.getEncoder().encodeToString(new byte[] {(byte) (crc32c >>> 24),
        (byte) (crc32c >>> 16), (byte) (crc32c >>> 8), (byte) crc32c});
  }

  /**
   * The checksum a base64 value gives.
   *
   * @throws IllegalArgumentException if it is not the base64 of four bytes
   */
  public static int fromBase64(CharSequence value) {
    byte[] b;
    try {
      b = Base64.getDecoder().decode(value.toString().trim());
    } catch (IllegalArgumentException e) {
      b = new byte[0];
    }
    if (b.length != 4) {
      throw new IllegalArgumentException("not the base64 of a CRC32C's four bytes (8 characters,"
          + " such as \"AAAAAA==\"): '" + value + "'");
    }
    return ((b[0] & 0xff) << 24) | ((b[1] & 0xff) << 16) | ((b[2] & 0xff) << 8) | (b[3] & 0xff);
  }
}
