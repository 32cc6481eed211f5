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

  /** The CRC32C polynomial, reflected. */
  private static final int POLY = 0x82F63B78;

  /**
   * The CRC32C of two runs of bytes one after the other, from each run's own CRC32C and the
   * second's length: for a block read in parts at once (ranged GETs, copies on several threads),
   * checked whole without a second pass. The register is linear, so the first run's CRC is
   * carried past the second run's length of zero bytes (a multiplication by x to the power of
   * 8 times the length, modulo the polynomial) and added to the second's.
   *
   * @param first the CRC32C of the first run
   * @param second the CRC32C of the second run
   * @param secondLength the second run's length in bytes, 0 or more
   */
  public static int combine(int first, int second, long secondLength) {
    if (secondLength < 0) {
      throw new IllegalArgumentException("a run of " + secondLength + " bytes");
    }
    return multiply(powerOfX(8 * secondLength), first) ^ second;
  }

  /** x to the power {@code n}, modulo the polynomial (reflected, as the register holds it). */
  private static int powerOfX(long n) {
    int result = 1 << 31; // x^0
    int square = 1 << 30; // x^1
    for (; n != 0; n >>>= 1) {
      if ((n & 1) != 0) {
        result = multiply(square, result);
      }
      square = multiply(square, square);
    }
    return result;
  }

  /** The product of two polynomials modulo the CRC32C polynomial, both reflected. */
  private static int multiply(int a, int b) {
    int product = 0;
    for (int bit = 1 << 31; bit != 0; bit >>>= 1) {
      if ((a & bit) != 0) {
        product ^= b;
      }
      b = (b & 1) != 0 ? (b >>> 1) ^ POLY : b >>> 1;
    }
    return product;
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
