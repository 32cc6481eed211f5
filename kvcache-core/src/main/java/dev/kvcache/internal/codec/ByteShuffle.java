package dev.kvcache.internal.codec;

import java.nio.ByteBuffer;
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
 */
public final class ByteShuffle {

  private ByteShuffle() {}

  /** Shuffles {@code length} bytes of {@code src} at {@code srcOff} into {@code dst} at 0. */
  public static void shuffle(ByteBuffer src, int srcOff, int length, int width, ByteBuffer dst) {
    int elements = length / width;
    int done = 0;
    if (width == 2) {
      done = shuffle2(src.duplicate().order(ByteOrder.LITTLE_ENDIAN), srcOff, elements,
          dst.duplicate().order(ByteOrder.LITTLE_ENDIAN));
    }
    for (int j = 0; j < width; j++) {
      int out = j * elements;
      for (int i = done, in = srcOff + j + done * width; i < elements; i++, in += width) {
        dst.put(out + i, src.get(in));
      }
    }
    int tail = elements * width;
    for (int k = tail; k < length; k++) {
      dst.put(k, src.get(srcOff + k));
    }
  }

  /** Reverses {@link #shuffle}: {@code length} bytes of {@code src} at 0 into {@code dst}. */
  public static void unshuffle(ByteBuffer src, int length, int width, ByteBuffer dst, int dstOff) {
    int elements = length / width;
    int done = 0;
    if (width == 2) {
      done = unshuffle2(src.duplicate().order(ByteOrder.LITTLE_ENDIAN), elements,
          dst.duplicate().order(ByteOrder.LITTLE_ENDIAN), dstOff);
    }
    for (int j = 0; j < width; j++) {
      int in = j * elements;
      for (int i = done, out = dstOff + j + done * width; i < elements; i++, out += width) {
        dst.put(out, src.get(in + i));
      }
    }
    int tail = elements * width;
    for (int k = tail; k < length; k++) {
      dst.put(dstOff + k, src.get(k));
    }
  }

  /**
   * Width 2, four elements at a time: one 8-byte load holds the low and high bytes of four
   * elements, which are gathered into one 4-byte store per plane. Returns the elements done.
   */
  private static int shuffle2(ByteBuffer src, int srcOff, int elements, ByteBuffer dst) {
    int quads = elements / 4;
    for (int q = 0; q < quads; q++) {
      long v = src.getLong(srcOff + 8 * q);
      int lo = (int) ((v & 0xffL) | ((v >>> 8) & 0xff00L) | ((v >>> 16) & 0xff0000L)
          | ((v >>> 24) & 0xff000000L));
      int hi = (int) (((v >>> 8) & 0xffL) | ((v >>> 16) & 0xff00L) | ((v >>> 24) & 0xff0000L)
          | ((v >>> 32) & 0xff000000L));
      dst.putInt(4 * q, lo);
      dst.putInt(elements + 4 * q, hi);
    }
    return quads * 4;
  }

  /** The inverse of {@link #shuffle2}. */
  private static int unshuffle2(ByteBuffer src, int elements, ByteBuffer dst, int dstOff) {
    int quads = elements / 4;
    for (int q = 0; q < quads; q++) {
      long lo = src.getInt(4 * q) & 0xffffffffL;
      long hi = src.getInt(elements + 4 * q) & 0xffffffffL;
      long v = (lo & 0xffL) | ((hi & 0xffL) << 8)
          | ((lo & 0xff00L) << 8) | ((hi & 0xff00L) << 16)
          | ((lo & 0xff0000L) << 16) | ((hi & 0xff0000L) << 24)
          | ((lo & 0xff000000L) << 24) | ((hi & 0xff000000L) << 32);
      dst.putLong(dstOff + 8 * q, v);
    }
    return quads * 4;
  }
}
