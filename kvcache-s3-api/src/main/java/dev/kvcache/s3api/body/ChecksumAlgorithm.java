package dev.kvcache.s3api.body;

import com.dynatrace.hash4j.hashing.HashStream128;
import com.dynatrace.hash4j.hashing.HashStream64;
import com.dynatrace.hash4j.hashing.HashValue128;
import com.dynatrace.hash4j.hashing.Hashing;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Base64;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Supplier;
import java.util.zip.CRC32;
import java.util.zip.CRC32C;
import java.util.zip.Checksum;
import net.jpountz.xxhash.StreamingXXHash64;
import net.jpountz.xxhash.XXHashFactory;

/**
 * The checksums an S3 client may send with a body ({@code x-amz-checksum-<name>}, in a header or
 * a trailer, base64 of the big-endian value), each computed as the bytes arrive ({@link Running}).
 * Stored records name one by its ordinal: new ones go last.
 */
public enum ChecksumAlgorithm {
  CRC32("crc32", 4, () -> checksum(new CRC32(), 4)),
  CRC32C("crc32c", 4, () -> checksum(new CRC32C(), 4)),
  CRC64NVME("crc64nvme", 8, () -> checksum(new Crc64Nvme(), 8)),
  SHA1("sha1", 20, () -> digest("SHA-1")),
  SHA256("sha256", 32, () -> digest("SHA-256")),
  SHA512("sha512", 64, () -> digest("SHA-512")),
  MD5("md5", 16, () -> digest("MD5")),
  XXHASH64("xxhash64", 8, ChecksumAlgorithm::xxHash64),
  XXHASH3("xxhash3", 8, ChecksumAlgorithm::xxh3),
  XXHASH128("xxhash128", 16, ChecksumAlgorithm::xxh3With128Bits);

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
        return bigEndian(bytes, c.getValue());
      }
    };
  }

  /** Base64 of the last {@code bytes} bytes of {@code values}, big-endian, one after another. */
  private static String bigEndian(int bytes, long... values) {
    ByteBuffer out = ByteBuffer.allocate(8 * values.length);
    for (long v : values) {
      out.putLong(v);
    }
    return Base64.getEncoder().encodeToString(
        Arrays.copyOfRange(out.array(), out.capacity() - bytes, out.capacity()));
  }

  private static Running xxHash64() {
    StreamingXXHash64 h = XXHashFactory.fastestJavaInstance().newStreamingHash64(0);
    return new FromArrays(h::update, () -> bigEndian(8, h.getValue()));
  }

  private static Running xxh3() {
    HashStream64 h = Hashing.xxh3_64().hashStream();
    return new FromArrays(h::putBytes, () -> bigEndian(8, h.getAsLong()));
  }

  private static Running xxh3With128Bits() {
    HashStream128 h = Hashing.xxh3_128().hashStream();
    return new FromArrays(h::putBytes, () -> {
      HashValue128 v = h.get();
      return bigEndian(16, v.getMostSignificantBits(), v.getLeastSignificantBits());
    });
  }

  /** Bytes taken from arrays, as a hash that reads only arrays does. */
  private interface ArrayTaker {
    void take(byte[] bytes, int offset, int length);
  }

  /** A hash fed from arrays: a buffer's own, or a scratch one that a direct buffer is copied to. */
  private static final class FromArrays implements Running {
    private final ArrayTaker taker;
    private final Supplier<String> value;
    private byte[] scratch;

    FromArrays(ArrayTaker taker, Supplier<String> value) {
      this.taker = taker;
      this.value = value;
    }

    @Override
    public void update(ByteBuffer b) {
      ByteBuffer d = b.duplicate();
      if (d.hasArray()) {
        taker.take(d.array(), d.arrayOffset() + d.position(), d.remaining());
        return;
      }
      if (scratch == null) {
        scratch = new byte[8192];
      }
      while (d.hasRemaining()) {
        int n = Math.min(scratch.length, d.remaining());
        d.get(scratch, 0, n);
        taker.take(scratch, 0, n);
      }
    }

    @Override
    public String base64() {
      return value.get();
    }
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
