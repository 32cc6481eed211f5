package dev.kvcache.spi;

import dev.kvcache.BlockKey;
import java.nio.ByteBuffer;

/**
 * Bytes handed to {@link Tier#putChecked} that do not have the CRC32C they were said to have: they
 * changed since that checksum was taken (damaged in memory), and nothing was stored.
 */
public final class ChecksumMismatchException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final transient BlockKey key;

  /**
   * @param key the block's key
   * @param expected the checksum the bytes were said to have
   * @param actual the checksum they have
   */
  public ChecksumMismatchException(BlockKey key, int expected, int actual) {
    super(key + ": the bytes' CRC32C is " + Crc32c.toBase64(actual) + ", not the "
        + Crc32c.toBase64(expected) + " they were stored with; nothing was stored");
    this.key = key;
  }

  /**
   * Checks that {@code bytes} (position to limit) have {@code expected} as their CRC32C.
   *
   * @throws ChecksumMismatchException if they do not
   */
  public static void check(BlockKey key, ByteBuffer bytes, int expected) {
    int actual = Crc32c.of(bytes);
    if (actual != expected) {
      throw new ChecksumMismatchException(key, expected, actual);
    }
  }

  /** The block's key. */
  public BlockKey key() {
    return key;
  }
}
