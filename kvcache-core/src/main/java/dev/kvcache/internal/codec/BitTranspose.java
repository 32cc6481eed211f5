package dev.kvcache.internal.codec;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * The bit-level half of the bit-shuffle filter: a run of {@code m} bytes is rewritten as eight
 * bit planes of {@code g = m / 8} bytes each, plane {@code k} holding bit {@code k} of every byte
 * (byte {@code i}'s bit lands in plane byte {@code i / 8}, bit {@code i % 8}); the last {@code m %
 * 8} bytes follow unchanged. Applied to each byte plane of {@link ByteShuffle}'s output it groups
 * the bits of fp16/bf16 values by significance, so the sign and exponent bits, which vary slowly,
 * form long runs for LZ4.
 *
 * <p>It works 64 bytes at a time: each 8-byte word is transposed as an 8x8 bit matrix (three
 * delta swaps), then the eight words as an 8x8 byte matrix (three rounds of block swaps, written
 * out so that the words stay in registers), giving one 8-byte word for each plane. Both transposes
 * are their own inverse, so {@link #untranspose} runs the same steps with loads and stores
 * exchanged.
 */
public final class BitTranspose {

  private static final VarHandle LONGS =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  private static final long BYTES_1 = 0x00ff00ff00ff00ffL;
  private static final long BYTES_2 = 0x0000ffff0000ffffL;
  private static final long BYTES_4 = 0x00000000ffffffffL;

  private BitTranspose() {}

  /** Transposes {@code length} bytes of {@code src} from {@code from} into {@code dst} at {@code to}. */
  public static void transpose(byte[] src, int from, int length, byte[] dst, int to) {
    int g = length / 8;
    int p = 0;
    for (; p + 8 <= g; p += 8) {
      block(src, from + 8 * p, 8, dst, to + p, g, true);
    }
    for (; p < g; p++) {
      long t = bits8x8((long) LONGS.get(src, from + 8 * p));
      for (int k = 0; k < 8; k++) {
        dst[to + k * g + p] = (byte) (t >>> (8 * k));
      }
    }
    System.arraycopy(src, from + 8 * g, dst, to + 8 * g, length - 8 * g);
  }

  /** Reverses {@link #transpose}. */
  public static void untranspose(byte[] src, int from, int length, byte[] dst, int to) {
    int g = length / 8;
    int p = 0;
    for (; p + 8 <= g; p += 8) {
      block(src, from + p, g, dst, to + 8 * p, 8, false);
    }
    for (; p < g; p++) {
      long t = 0;
      for (int k = 0; k < 8; k++) {
        t |= (src[from + k * g + p] & 0xffL) << (8 * k);
      }
      LONGS.set(dst, to + 8 * p, bits8x8(t));
    }
    System.arraycopy(src, from + 8 * g, dst, to + 8 * g, length - 8 * g);
  }

  /**
   * Transposes 64 bytes as an 8x8 matrix of 8-byte words: the words at {@code in + j * inStride}
   * are the rows, the words at {@code out + k * outStride} the columns, each word also transposed
   * as an 8x8 bit matrix, on load ({@code bitsOnLoad}) or on store. The words stay in registers.
   */
  private static void block(
      byte[] src, int in, int inStride, byte[] dst, int out, int outStride, boolean bitsOnLoad) {
    long w0 = word(src, in, bitsOnLoad);
    long w1 = word(src, in + 1 * inStride, bitsOnLoad);
    long w2 = word(src, in + 2 * inStride, bitsOnLoad);
    long w3 = word(src, in + 3 * inStride, bitsOnLoad);
    long w4 = word(src, in + 4 * inStride, bitsOnLoad);
    long w5 = word(src, in + 5 * inStride, bitsOnLoad);
    long w6 = word(src, in + 6 * inStride, bitsOnLoad);
    long w7 = word(src, in + 7 * inStride, bitsOnLoad);
    long t;
    t = w0;
    w0 = (t & BYTES_1) | ((w1 << 8) & ~BYTES_1);
    w1 = ((t >>> 8) & BYTES_1) | (w1 & ~BYTES_1);
    t = w2;
    w2 = (t & BYTES_1) | ((w3 << 8) & ~BYTES_1);
    w3 = ((t >>> 8) & BYTES_1) | (w3 & ~BYTES_1);
    t = w4;
    w4 = (t & BYTES_1) | ((w5 << 8) & ~BYTES_1);
    w5 = ((t >>> 8) & BYTES_1) | (w5 & ~BYTES_1);
    t = w6;
    w6 = (t & BYTES_1) | ((w7 << 8) & ~BYTES_1);
    w7 = ((t >>> 8) & BYTES_1) | (w7 & ~BYTES_1);
    t = w0;
    w0 = (t & BYTES_2) | ((w2 << 16) & ~BYTES_2);
    w2 = ((t >>> 16) & BYTES_2) | (w2 & ~BYTES_2);
    t = w1;
    w1 = (t & BYTES_2) | ((w3 << 16) & ~BYTES_2);
    w3 = ((t >>> 16) & BYTES_2) | (w3 & ~BYTES_2);
    t = w4;
    w4 = (t & BYTES_2) | ((w6 << 16) & ~BYTES_2);
    w6 = ((t >>> 16) & BYTES_2) | (w6 & ~BYTES_2);
    t = w5;
    w5 = (t & BYTES_2) | ((w7 << 16) & ~BYTES_2);
    w7 = ((t >>> 16) & BYTES_2) | (w7 & ~BYTES_2);
    t = w0;
    w0 = (t & BYTES_4) | ((w4 << 32) & ~BYTES_4);
    w4 = ((t >>> 32) & BYTES_4) | (w4 & ~BYTES_4);
    t = w1;
    w1 = (t & BYTES_4) | ((w5 << 32) & ~BYTES_4);
    w5 = ((t >>> 32) & BYTES_4) | (w5 & ~BYTES_4);
    t = w2;
    w2 = (t & BYTES_4) | ((w6 << 32) & ~BYTES_4);
    w6 = ((t >>> 32) & BYTES_4) | (w6 & ~BYTES_4);
    t = w3;
    w3 = (t & BYTES_4) | ((w7 << 32) & ~BYTES_4);
    w7 = ((t >>> 32) & BYTES_4) | (w7 & ~BYTES_4);
    LONGS.set(dst, out, bitsOnLoad ? w0 : bits8x8(w0));
    LONGS.set(dst, out + 1 * outStride, bitsOnLoad ? w1 : bits8x8(w1));
    LONGS.set(dst, out + 2 * outStride, bitsOnLoad ? w2 : bits8x8(w2));
    LONGS.set(dst, out + 3 * outStride, bitsOnLoad ? w3 : bits8x8(w3));
    LONGS.set(dst, out + 4 * outStride, bitsOnLoad ? w4 : bits8x8(w4));
    LONGS.set(dst, out + 5 * outStride, bitsOnLoad ? w5 : bits8x8(w5));
    LONGS.set(dst, out + 6 * outStride, bitsOnLoad ? w6 : bits8x8(w6));
    LONGS.set(dst, out + 7 * outStride, bitsOnLoad ? w7 : bits8x8(w7));
  }

  private static long word(byte[] src, int at, boolean transposeBits) {
    long w = (long) LONGS.get(src, at);
    return transposeBits ? bits8x8(w) : w;
  }

  /**
   * Transposes the 8x8 bit matrix whose row {@code r} is byte {@code r} of {@code x}: bit {@code c}
   * of byte {@code r} becomes bit {@code r} of byte {@code c}.
   */
  static long bits8x8(long x) {
    long t = (x ^ (x >>> 7)) & 0x00aa00aa00aa00aaL;
    x ^= t ^ (t << 7);
    t = (x ^ (x >>> 14)) & 0x0000cccc0000ccccL;
    x ^= t ^ (t << 14);
    t = (x ^ (x >>> 28)) & 0x00000000f0f0f0f0L;
    return x ^ t ^ (t << 28);
  }
}
