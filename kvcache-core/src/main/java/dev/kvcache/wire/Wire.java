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

  /**
   * A PUT's engine block hash, an unsigned 64-bit integer in decimal: the hash under which the
   * engine knows the block, which the server's KV events name it by. The other {@code
   * kvcache-engine-} headers go with it.
   */
  public static final String ENGINE_HASH = "kvcache-engine-hash";

  /** The engine's hash of the block before this one in its prompt, as {@link #ENGINE_HASH}. */
  public static final String ENGINE_PARENT = "kvcache-engine-parent";

  /** The token ids of the block, comma-separated. */
  public static final String ENGINE_TOKENS = "kvcache-engine-tokens";

  /** The engine's block size in tokens. */
  public static final String ENGINE_BLOCK_SIZE = "kvcache-engine-block-size";

  /** The model the engine serves, as routers name it: the {@code <model>} of the events' topic. */
  public static final String ENGINE_MODEL = "kvcache-engine-model";

  /** The LoRA adapter the block was computed with, if any. */
  public static final String ENGINE_LORA = "kvcache-engine-lora";

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
