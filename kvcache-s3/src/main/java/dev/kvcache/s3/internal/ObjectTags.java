package dev.kvcache.s3.internal;

import dev.kvcache.BlockKey;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Base64;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * A block's tag ({@link dev.kvcache.spi.BlockTags}) as an object keeps it: in the user metadata
 * {@value #METADATA}, base64 of the tag's bytes and a CRC32C (big-endian) of the block key's 16
 * bytes and the tag's, so that a tag is never taken from damaged metadata or for another block.
 * An object store keeps at most 2 KiB of user metadata per object: tags longer than {@value
 * #MAX_BYTES} bytes are not kept.
 */
public final class ObjectTags {

  /** The user metadata key of an object's tag. */
  public static final String METADATA = "kvcache-tag";
  /** The longest tag an object keeps. */
  public static final int MAX_BYTES = 1400;

  private ObjectTags() {}

  /** The metadata value of {@code tag} for block {@code key}; null if it is too long to keep. */
  public static String encode(BlockKey key, byte[] tag) {
    if (tag.length > MAX_BYTES) {
      return null;
    }
    ByteBuffer b = ByteBuffer.allocate(tag.length + 4).put(tag).putInt(crc(key, tag));
    return Base64.getEncoder().encodeToString(b.array());
  }

  /**
   * The tag an object's {@code metadata} keeps for block {@code key} (its key matched without
   * regard to case); null if it keeps none, or one that fails its checksum.
   */
  public static byte[] decode(BlockKey key, Map<String, String> metadata) {
    if (metadata == null) {
      return null;
    }
    for (Map.Entry<String, String> e : metadata.entrySet()) {
      if (e.getKey().equalsIgnoreCase(METADATA)) {
        byte[] b;
        try {
          b = Base64.getDecoder().decode(e.getValue().strip());
        } catch (IllegalArgumentException bad) {
          return null;
        }
        if (b.length < 5) {
          return null;
        }
        byte[] tag = Arrays.copyOf(b, b.length - 4);
        return ByteBuffer.wrap(b, tag.length, 4).getInt() == crc(key, tag) ? tag : null;
      }
    }
    return null;
  }

  private static int crc(BlockKey key, byte[] tag) {
    CRC32C crc = new CRC32C();
    crc.update(ByteBuffer.allocate(16).putLong(key.hi()).putLong(key.lo()).flip());
    crc.update(tag);
    return (int) crc.getValue();
  }
}
