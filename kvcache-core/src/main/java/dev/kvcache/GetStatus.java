package dev.kvcache;

/** The outcome of a read. */
public enum GetStatus {
  /** The block was found (and, for a copying read, copied). */
  HIT,
  /** No block with this key is cached. */
  MISS,
  /**
   * The block exists but the destination buffer has fewer bytes remaining than the block's length;
   * the destination was not changed.
   */
  BUFFER_TOO_SMALL
}
