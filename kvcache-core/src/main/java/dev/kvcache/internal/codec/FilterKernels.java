package dev.kvcache.internal.codec;

import dev.kvcache.codec.Filter;

/**
 * Applies or removes a {@link Filter} on a chunk held in a heap array, with a second array for the
 * intermediate step; returns whichever of the two holds the result (the byte shuffle works from
 * one array into the other, the bit shuffle in place).
 */
public final class FilterKernels {

  private FilterKernels() {}

  /** Filters the first {@code length} bytes of {@code data}; returns the array holding them. */
  public static byte[] apply(Filter filter, byte[] data, int length, byte[] scratch) {
    switch (filter) {
      case NONE:
        return data;
      case BIT_SHUFFLE_1:
      case BIT_SHUFFLE_2:
      case BIT_SHUFFLE_4:
        BitShuffle.shuffle(data, length, filter.elementSizeBytes(), scratch);
        return data;
      default:
        ByteShuffle.shuffle(data, length, filter.elementSizeBytes(), scratch);
        return scratch;
    }
  }

  /** Reverses {@link #apply} on the first {@code length} bytes of {@code data}. */
  public static byte[] remove(Filter filter, byte[] data, int length, byte[] scratch) {
    switch (filter) {
      case NONE:
        return data;
      case BIT_SHUFFLE_1:
      case BIT_SHUFFLE_2:
      case BIT_SHUFFLE_4:
        BitShuffle.unshuffle(data, length, filter.elementSizeBytes(), scratch);
        return data;
      default:
        ByteShuffle.unshuffle(data, length, filter.elementSizeBytes(), scratch);
        return scratch;
    }
  }
}
