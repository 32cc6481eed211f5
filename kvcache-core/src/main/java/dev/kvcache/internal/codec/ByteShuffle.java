package dev.kvcache.internal.codec;

import java.nio.ByteBuffer;

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
    for (int j = 0; j < width; j++) {
      int out = j * elements;
      for (int i = 0, in = srcOff + j; i < elements; i++, in += width) {
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
    for (int j = 0; j < width; j++) {
      int in = j * elements;
      for (int i = 0, out = dstOff + j; i < elements; i++, out += width) {
        dst.put(out, src.get(in + i));
      }
    }
    int tail = elements * width;
    for (int k = tail; k < length; k++) {
      dst.put(dstOff + k, src.get(k));
    }
  }
}
