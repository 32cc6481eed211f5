package dev.kvcache.wire;

import dev.kvcache.BlockKey;
import dev.kvcache.spi.Crc32c;

/**
 * The names of kvcache-server's HTTP API, which the server and the Java client share: its paths,
 * its own headers, and the content coding of blocks in the codec's container. The API itself is
 * {@code docs/server.md} and {@code docs/openapi.yaml}; header names are case-insensitive on the
 * wire and written here in lower case, as HTTP/2 sends them.
 */
public final class Wire {

  private Wire() {}

  /** The root of every namespace's resources; a namespace's name follows. */
  public static final String NAMESPACES = "/v1/namespaces/";

  /** A block's length in bytes, on the answers that carry or describe one block. */
  public static final String BLOCK_LENGTH = "kvcache-block-length";

  /** The lengths of a batch's blocks, in key order, comma-separated. */
  public static final String BLOCK_LENGTHS = "kvcache-block-lengths";

  /** The CRC32Cs of a batch's blocks, in key order, comma-separated, each as {@link #CHECKSUM}. */
  public static final String BLOCK_CHECKSUMS = "kvcache-block-crc32c";

  /** What a PUT did: {@code stored} or {@code not-admitted}. */
  public static final String PUT_STATUS = "kvcache-put";

  /**
   * A block's CRC32C (Castagnoli), on a PUT and on the answer to a GET: the S3 convention, the
   * base64 of its four bytes in big-endian order ({@link #checksum(int)}).
   */
  public static final String CHECKSUM = "x-amz-checksum-crc32c";

  /** The content coding of a block in the codec's container ({@code dev.kvcache.codec}). */
  public static final String CODING = "kvcache-lz4";

  /** The path of a namespace's resources, without a trailing slash. */
  public static String namespacePath(String namespace) {
    return NAMESPACES + namespace;
  }

  /** The path of one block. */
  public static String blockPath(String namespace, BlockKey key) {
    return namespacePath(namespace) + "/blocks/" + key.toHex();
  }

  /** The path of a batch read. */
  public static String batchPath(String namespace) {
    return namespacePath(namespace) + "/batch-get";
  }

  /** The path of a prefix lookup. */
  public static String lookupPath(String namespace) {
    return namespacePath(namespace) + "/lookup";
  }

  /** The path of a pinned lookup's lease. */
  public static String leasePath(String namespace, String lease) {
    return namespacePath(namespace) + "/leases/" + lease;
  }

  /** The path of block {@code index} of a pinned lookup's lease. */
  public static String pinnedBlockPath(String namespace, String lease, int index) {
    return leasePath(namespace, lease) + "/blocks/" + index;
  }

  /** The value of {@link #CHECKSUM} for a checksum. */
  public static String checksum(int crc32c) {
    return Crc32c.toBase64(crc32c);
  }

  /**
   * The checksum a value of {@link #CHECKSUM} gives.
   *
   * @throws IllegalArgumentException naming the header, if it is not the base64 of four bytes
   */
  public static int checksum(CharSequence value) {
    try {
      return Crc32c.fromBase64(value);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(CHECKSUM + " must be the base64 of a CRC32C's four bytes"
          + " (8 characters, such as \"AAAAAA==\"), got '" + value + "'", e);
    }
  }
}
