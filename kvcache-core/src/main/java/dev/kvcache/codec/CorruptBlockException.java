package dev.kvcache.codec;

import java.io.IOException;

/**
 * An encoded block that cannot be decoded: truncated, from another format, or damaged. It names
 * what is wrong ({@link #reason()}), the chunk ({@link #chunkIndex()}, -1 for the container
 * header) and the byte offset in the encoded stream where the problem was found. The decoder reads
 * nothing out of bounds and never reports success for bytes that fail their checksum; after this
 * exception the destination's bytes are unspecified and must not be used.
 */
public final class CorruptBlockException extends IOException {

  private static final long serialVersionUID = 1L;

  /** What is wrong with the encoded bytes. */
  public enum Reason {
    /** The stream does not start with the container's magic number. */
    BAD_MAGIC,
    /** The container was written by a format version this reader does not know. */
    UNSUPPORTED_VERSION,
    /**
     * A header field has a value no writer produces: unknown filter or chunk mode, reserved bits
     * set, chunk size out of range, lengths that disagree.
     */
    BAD_HEADER,
    /** The stream ends before the container does. */
    TRUNCATED,
    /**
     * A chunk's lengths are impossible: its raw length differs from what the container header
     * implies, or its stored length exceeds what its mode allows. (A length that merely runs past
     * the end of the stream is {@link #TRUNCATED}.)
     */
    LENGTH_OUT_OF_BOUNDS,
    /** A chunk's bytes do not match its checksum, or the header's checksum fails. */
    CHECKSUM_MISMATCH,
    /** A chunk decompressed to a size other than its header says. */
    SIZE_MISMATCH
  }

  private final Reason reason;
  private final int chunkIndex;
  private final long offset;

  public CorruptBlockException(Reason reason, int chunkIndex, long offset, String detail) {
    super(
        reason + (chunkIndex < 0 ? " in the container header" : " in chunk " + chunkIndex)
            + " at byte " + offset + ": " + detail);
    this.reason = reason;
    this.chunkIndex = chunkIndex;
    this.offset = offset;
  }

  public Reason reason() {
    return reason;
  }

  /** The damaged chunk, or -1 for the container header. */
  public int chunkIndex() {
    return chunkIndex;
  }

  /**
   * Where the problem was found, in bytes from the start of the container: the start of the
   * damaged chunk, or for the container header the offending field (0 when the header is cut
   * short).
   */
  public long offset() {
    return offset;
  }
}
