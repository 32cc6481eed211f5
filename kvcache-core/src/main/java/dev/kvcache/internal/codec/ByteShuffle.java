package dev.kvcache.internal.codec;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * The byte-shuffle filter (as in Blosc): for elements of {@code w} bytes, byte {@code j} of every
 * element is gathered into plane {@code j}, so the slowly varying high bytes of fp16/bf16 values
 * sit next to each other where LZ4 can find repeats. Trailing bytes that do not fill an element
 * are copied unchanged after the planes.
 *
 * <pre>
 *   input  (w = 2): a0 a1 b0 b1 c0 c1 d0 d1 x
 *   output        : a0 b0 c0 d0 a1 b1 c1 d1 x
 * </pre>
 *
 * It works on heap arrays, where the JIT compiles array-view loads and stores to plain moves:
 * the codec copies a chunk in or out of its buffer in bulk around the transform. The 2-byte case
 * moves eight elements per step with shifts and masks (packing even and odd bytes, spreading them
 * back); other widths go a byte at a time.
 */
public final class ByteShuffle {

  private static final VarHandle INTS =
      MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle LONGS =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  private ByteShuffle() {}

  /** Shuffles the first {@code length} bytes of {@code src} into {@code dst}. */
  public static void shuffle(byte[] src, int length, int width, byte[] dst) {
    int elements = length / width;
    int done = width == 2 ? shuffle2(src, elements, dst) : 0;
    for (int j = 0; j < width; j++) {
      int out = j * elements;
      for (int i = done, in = j + done * width; i < elements; i++, in += width) {
        dst[out + i] = src[in];
      }
    }
    int tail = elements * width;
    System.arraycopy(src, tail, dst, tail, length - tail);
  }

  /** Reverses {@link #shuffle}: the first {@code length} bytes of {@code src} into {@code dst}. */
  public static void unshuffle(byte[] src, int length, int width, byte[] dst) {
    int elements = length / width;
    int done = width == 2 ? unshuffle2(src, elements, dst) : 0;
    for (int j = 0; j < width; j++) {
      int in = j * elements;
      for (int i = done, out = j + done * width; i < elements; i++, out += width) {
        dst[out] = src[in + i];
      }
    }
    int tail = elements * width;
    System.arraycopy(src, tail, dst, tail, length - tail);
  }

  /**
   * Width 2, eight elements at a time: two 8-byte loads hold the low and high bytes of eight
   * elements; the even bytes and the odd bytes are each packed together (see {@link #pack}) and
   * stored with one 8-byte store per plane. Returns the elements done.
   */
  private static int shuffle2(byte[] src, int elements, byte[] dst) {
    int octets = elements / 8;
    for (int q = 0; q < octets; q++) {
      long v0 = (long) LONGS.get(src, 16 * q);
      long v1 = (long) LONGS.get(src, 16 * q + 8);
      LONGS.set(dst, 8 * q, pack(v0) | (pack(v1) << 32));
      LONGS.set(dst, elements + 8 * q, pack(v0 >>> 8) | (pack(v1 >>> 8) << 32));
    }
    return octets * 8;
  }

  /** The inverse of {@link #shuffle2}. */
  private static int unshuffle2(byte[] src, int elements, byte[] dst) {
    int octets = elements / 8;
    for (int q = 0; q < octets; q++) {
      long lo = (long) LONGS.get(src, 8 * q);
      long hi = (long) LONGS.get(src, elements + 8 * q);
      LONGS.set(dst, 16 * q, spread(lo) | (spread(hi) << 8));
      LONGS.set(dst, 16 * q + 8, spread(lo >>> 32) | (spread(hi >>> 32) << 8));
    }
    return octets * 8;
  }

  /** Bytes 0, 2, 4, 6 of {@code v} packed into bytes 0..3 of the result. */
  private static long pack(long v) {
    long x = v & 0x00ff00ff00ff00ffL;
    x = (x | (x >>> 8)) & 0x0000ffff0000ffffL;
    return (x | (x >>> 16)) & 0xffffffffL;
  }

  /** Bytes 0..3 of {@code v} spread to bytes 0, 2, 4, 6 of the result (the others zero). */
  private static long spread(long v) {
    long x = v & 0xffffffffL;
    x = (x | (x << 16)) & 0x0000ffff0000ffffL;
    return (x | (x << 8)) & 0x00ff00ff00ff00ffL;
  }
}
