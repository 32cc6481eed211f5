package dev.kvcache.codec;

import static dev.kvcache.internal.codec.ContainerLayout.FILTER_BIT_SHUFFLE;
import static dev.kvcache.internal.codec.ContainerLayout.FILTER_BYTE_SHUFFLE;
import static dev.kvcache.internal.codec.ContainerLayout.FILTER_NONE;

import dev.kvcache.internal.codec.BitShuffle;
import dev.kvcache.internal.codec.ByteShuffle;

/**
 * A reversible transform applied to each chunk before LZ4, chosen per namespace or per call. The
 * filter and its element size are recorded in the container, so a reader needs no configuration.
 *
 * <p>Which to pick, measured on the K/V tensors of a real model (see {@code docs/benchmarks/codec.md}):
 * {@link #BYTE_SHUFFLE_2} for bf16, where it compresses best among the settings that decode
 * quickly; {@link #NONE} for fp16, which no filter compresses by more than a few percent, and for
 * data already compressed or encrypted. The bit shuffles compress a little better than the byte
 * shuffles and decode more slowly.
 */
public enum Filter {
  /** Bytes go to LZ4 unchanged. */
  NONE(FILTER_NONE, 1),
  /** Byte shuffle for 2-byte elements (fp16, bf16): all low bytes, then all high bytes. */
  BYTE_SHUFFLE_2(FILTER_BYTE_SHUFFLE, 2),
  /** Byte shuffle for 4-byte elements (fp32). */
  BYTE_SHUFFLE_4(FILTER_BYTE_SHUFFLE, 4),
  /** Bit shuffle for 1-byte elements (fp8, int8): bit 0 of every byte, then bit 1, and so on. */
  BIT_SHUFFLE_1(FILTER_BIT_SHUFFLE, 1),
  /** Bit shuffle for 2-byte elements: a byte shuffle, then each byte plane split into bit planes. */
  BIT_SHUFFLE_2(FILTER_BIT_SHUFFLE, 2),
  /** Bit shuffle for 4-byte elements. */
  BIT_SHUFFLE_4(FILTER_BIT_SHUFFLE, 4);

  private final int formatId;
  private final int elementSizeBytes;

  Filter(int formatId, int elementSizeBytes) {
    this.formatId = formatId;
    this.elementSizeBytes = elementSizeBytes;
  }

  /** The element size the filter groups bytes by; 1 for {@link #NONE}. */
  public int elementSizeBytes() {
    return elementSizeBytes;
  }

  /**
   * Applies the filter to the first {@code length} bytes of {@code data}, a chunk held in a heap
   * array, with {@code scratch} (as long) for the intermediate step.
   *
   * @return whichever of the two arrays holds the result: the byte shuffle works from one array
   *     into the other, the bit shuffle in place
   */
  public byte[] apply(byte[] data, int length, byte[] scratch) {
    switch (this) {
      case NONE:
        return data;
      case BIT_SHUFFLE_1:
      case BIT_SHUFFLE_2:
      case BIT_SHUFFLE_4:
        BitShuffle.shuffle(data, length, elementSizeBytes, scratch);
        return data;
      default:
        ByteShuffle.shuffle(data, length, elementSizeBytes, scratch);
        return scratch;
    }
  }

  /** Reverses {@link #apply} on the first {@code length} bytes of {@code data}. */
  public byte[] remove(byte[] data, int length, byte[] scratch) {
    switch (this) {
      case NONE:
        return data;
      case BIT_SHUFFLE_1:
      case BIT_SHUFFLE_2:
      case BIT_SHUFFLE_4:
        BitShuffle.unshuffle(data, length, elementSizeBytes, scratch);
        return data;
      default:
        ByteShuffle.unshuffle(data, length, elementSizeBytes, scratch);
        return scratch;
    }
  }

  /** The filter's code in the container header. */
  int formatId() {
    return formatId;
  }

  /** The filter a header names, or null if this reader does not know it. */
  static Filter fromFormat(int formatId, int elementSizeBytes) {
    for (Filter f : values()) {
      if (f.formatId == formatId && f.elementSizeBytes == elementSizeBytes) {
        return f;
      }
    }
    return null;
  }
}
