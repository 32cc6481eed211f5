package dev.kvcache.testkit;

import dev.kvcache.BlockKey;
import java.nio.ByteBuffer;
import java.util.SplittableRandom;

/**
 * Self-verifying block payloads for tests: the first 32 bytes name the key, a version and the
 * length, the rest is a pseudo-random stream seeded by all three. A read can therefore prove that
 * the bytes it got are exactly one version put under the key it asked for: no foreign block, no
 * torn write, no stale memory.
 */
public final class Payloads {

  /** Bytes of the self-describing header. */
  public static final int HEADER_BYTES = 32;

  private Payloads() {}

  /** A direct buffer holding version {@code version} of the block for {@code key}. */
  public static ByteBuffer of(BlockKey key, long version, int length) {
    ByteBuffer b = ByteBuffer.allocateDirect(length);
    fill(b, key, version);
    return b.flip();
  }

  /** Writes the payload for (key, version) over {@code dst}'s remaining bytes. */
  public static void fill(ByteBuffer dst, BlockKey key, long version) {
    int length = dst.remaining();
    if (length < HEADER_BYTES) {
      throw new IllegalArgumentException("payloads are at least " + HEADER_BYTES + " bytes");
    }
    dst.putLong(key.hi()).putLong(key.lo()).putLong(version).putLong(length);
    SplittableRandom random = new SplittableRandom(seed(key, version, length));
    while (dst.remaining() >= 8) {
      dst.putLong(random.nextLong());
    }
    while (dst.hasRemaining()) {
      dst.put((byte) random.nextInt());
    }
  }

  /**
   * Checks that {@code bytes} (position to limit) is a payload of {@code key} and returns its
   * version.
   *
   * @throws AssertionError naming the first byte that differs
   */
  public static long verify(BlockKey key, ByteBuffer bytes) {
    ByteBuffer b = bytes.duplicate();
    int start = b.position();
    int length = b.remaining();
    if (length < HEADER_BYTES) {
      throw new AssertionError("block " + key + " read back as " + length + " bytes");
    }
    long hi = b.getLong();
    long lo = b.getLong();
    long version = b.getLong();
    long declared = b.getLong();
    if (hi != key.hi() || lo != key.lo()) {
      throw new AssertionError(
          "asked for block " + key + " but got bytes of " + BlockKey.of(hi, lo));
    }
    if (declared != length) {
      throw new AssertionError(
          "block " + key + " version " + version + " is " + declared + " bytes, read " + length);
    }
    SplittableRandom random = new SplittableRandom(seed(key, version, length));
    while (b.remaining() >= 8) {
      int at = b.position() - start;
      if (b.getLong() != random.nextLong()) {
        throw new AssertionError(
            "block " + key + " version " + version + " differs near byte " + at);
      }
    }
    while (b.hasRemaining()) {
      int at = b.position() - start;
      if (b.get() != (byte) random.nextInt()) {
        throw new AssertionError("block " + key + " version " + version + " differs at byte " + at);
      }
    }
    return version;
  }

  /** A key for test number {@code n}, spread over the whole key space. */
  public static BlockKey key(long n) {
    SplittableRandom r = new SplittableRandom(n * 0x9E3779B97F4A7C15L + 1);
    return BlockKey.of(r.nextLong(), r.nextLong());
  }

  private static long seed(BlockKey key, long version, int length) {
    return key.hi() * 31 + key.lo() * 17 + version * 0x9E3779B97F4A7C15L + length;
  }
}
