package dev.kvcache.testkit;

import java.nio.ByteBuffer;
import java.util.Random;

/** Block contents for tests, the same for a given seed in every module. */
public final class TestBytes {

  private TestBytes() {}

  /** {@code length} pseudo-random bytes: what no codec shrinks. */
  public static byte[] random(int length, long seed) {
    byte[] b = new byte[length];
    new Random(seed).nextBytes(b);
    return b;
  }

  /**
   * Little-endian half floats of small magnitude: random low bytes, high bytes of three values,
   * so that a byte shuffle lets LZ4 shrink them, as it does K and V tensors.
   */
  public static byte[] halfFloats(int length, long seed) {
    byte[] b = new byte[length];
    Random r = new Random(seed);
    for (int i = 0; i + 1 < length; i += 2) {
      b[i] = (byte) r.nextInt();
      b[i + 1] = (byte) (0x30 + r.nextInt(3));
    }
    return b;
  }

  /** Where {@code what} first occurs in {@code bytes}; -1 if nowhere. */
  public static int indexOf(byte[] bytes, byte[] what) {
    outer:
    for (int i = 0; i + what.length <= bytes.length; i++) {
      for (int j = 0; j < what.length; j++) {
        if (bytes[i + j] != what[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }

  /** {@link #random} in a direct buffer, ready to be read. */
  public static ByteBuffer randomDirect(int length, long seed) {
    return direct(random(length, seed));
  }

  /** {@link #halfFloats} in a direct buffer, ready to be read. */
  public static ByteBuffer halfFloatsDirect(int length, long seed) {
    return direct(halfFloats(length, seed));
  }

  /** A direct buffer holding {@code bytes}, ready to be read. */
  public static ByteBuffer direct(byte[] bytes) {
    return ByteBuffer.allocateDirect(bytes.length).put(bytes).flip();
  }
}
