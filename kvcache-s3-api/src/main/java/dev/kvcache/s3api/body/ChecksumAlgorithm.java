package dev.kvcache.s3api.body;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Supplier;
import java.util.zip.CRC32;
import java.util.zip.CRC32C;
import java.util.zip.Checksum;

/**
 * The checksums an S3 client may send with a body ({@code x-amz-checksum-<name>}, in a header or
 * a trailer, base64 of the big-endian value), each computed as the bytes arrive ({@link Running}).
 */
public enum ChecksumAlgorithm {
  CRC32("crc32", 4, () -> checksum(new CRC32(), 4)),
  CRC32C("crc32c", 4, () -> checksum(new CRC32C(), 4)),
  CRC64NVME("crc64nvme", 8, () -> checksum(new Crc64Nvme(), 8)),
  SHA1("sha1", 20, () -> digest("SHA-1")),
  SHA256("sha256", 32, () -> digest("SHA-256"));

  private final String name;
  private final int bytes;
  private final Supplier<Running> start;

  ChecksumAlgorithm(String name, int bytes, Supplier<Running> start) {
    this.name = name;
    this.bytes = bytes;
    this.start = start;
  }

  /** The length of a value as S3 writes it, in base64 characters (with padding). */
  public int base64Length() {
    return (bytes + 2) / 3 * 4;
  }

  /** The header (and trailer) that carries it: {@code x-amz-checksum-crc32} and so on. */
  public String header() {
    return "x-amz-checksum-" + name;
  }

  /** The algorithm named {@code name} as S3 names it ({@code CRC32}, {@code crc64nvme}, ...). */
  public static Optional<ChecksumAlgorithm> named(String name) {
    String n = name.strip().toLowerCase(Locale.ROOT);
    for (ChecksumAlgorithm a : values()) {
      if (a.name.equals(n)) {
        return Optional.of(a);
      }
    }
    return Optional.empty();
  }

  /** The algorithm whose header is {@code header} (lower case); empty if none is. */
  public static Optional<ChecksumAlgorithm> ofHeader(String header) {
    return header.startsWith("x-amz-checksum-")
        ? named(header.substring("x-amz-checksum-".length())) : Optional.empty();
  }

  /** A new computation of this checksum. */
  public Running start() {
    return start.get();
  }

  /** A checksum being computed over bytes as they come. */
  public interface Running {

    /** Takes {@code bytes}' remaining bytes, leaving its position alone. */
    void update(ByteBuffer bytes);

    /** The checksum of the bytes taken, as S3 writes it: base64 of its big-endian bytes. */
    String base64();
  }

  private static Running checksum(Checksum c, int bytes) {
    return new Running() {
      @Override
      public void update(ByteBuffer b) {
        c.update(b.duplicate());
      }

      @Override
      public String base64() {
        ByteBuffer out = ByteBuffer.allocate(8).putLong(c.getValue());
        return Base64.getEncoder().encodeToString(
            java.util.Arrays.copyOfRange(out.array(), 8 - bytes, 8));
      }
    };
  }

  private static Running digest(String algorithm) {
    MessageDigest d;
    try {
      d = MessageDigest.getInstance(algorithm);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no " + algorithm, e);
    }
    return new Running() {
      @Override
      public void update(ByteBuffer b) {
        d.update(b.duplicate());
      }

      @Override
      public String base64() {
        return Base64.getEncoder().encodeToString(d.digest());
      }
    };
  }
}
