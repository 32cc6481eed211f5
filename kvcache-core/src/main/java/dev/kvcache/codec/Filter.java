package dev.kvcache.codec;

/**
 * A reversible transform applied to each chunk before LZ4, chosen per namespace or per call. The
 * filter and its element size are recorded in the container, so a reader needs no configuration.
 */
public enum Filter {
  /** Bytes go to LZ4 unchanged. */
  NONE(1),
  /** Byte shuffle for 2-byte elements (fp16, bf16): all low bytes, then all high bytes. */
  BYTE_SHUFFLE_2(2),
  /** Byte shuffle for 4-byte elements (fp32). */
  BYTE_SHUFFLE_4(4);

  private final int elementSizeBytes;

  Filter(int elementSizeBytes) {
    this.elementSizeBytes = elementSizeBytes;
  }

  /** The element size the filter groups bytes by; 1 for {@link #NONE}. */
  public int elementSizeBytes() {
    return elementSizeBytes;
  }
}
