package dev.kvcache.server.s3;

import dev.kvcache.BlockKey;
import dev.kvcache.spi.BlockTags;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Singleton;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.time.Instant;
import java.util.Collections;
import java.util.Map;
import java.util.NavigableMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * The names of the objects the cache's tiers hold, by bucket, sorted: what ListObjectsV2 lists.
 * An object's name, length, CRC32C and time go with its block into every tier that keeps tags
 * ({@link #tagOf}: the disk tier, the object tier), so that a server that starts again over its
 * disk lists what it held; an object leaves the listing when it has left every tier (evicted or
 * deleted). Objects another server of a fleet stored in the object tier are listed once this
 * server has read them.
 */
@Singleton
@Requires(property = "kvcache.s3.enabled", notEquals = "false")
final class ObjectNames implements BlockTags {

  /** The first byte of an object's tag: its format, apart from the engine blocks' (1). */
  private static final int TAG_FORMAT = 2;

  /**
   * An object as it is listed.
   *
   * @param bucket its bucket
   * @param name its key
   * @param length its length in bytes
   * @param crc32c the CRC32C of its bytes
   * @param lastModified when it was stored
   */
  record Listed(String bucket, String name, long length, int crc32c, Instant lastModified) {

    String etag() {
      return StoredObject.etag(crc32c, length);
    }
  }

  /** An object, with the tiers that hold it (a bit each). */
  private record Held(Listed object, int tiers) {}

  private final Map<BlockKey, Listed> writing = new ConcurrentHashMap<>();
  private final Map<BlockKey, Held> held = new ConcurrentHashMap<>();
  private final Map<String, ConcurrentSkipListMap<String, Listed>> byBucket =
      new ConcurrentHashMap<>();
  private final Map<String, Integer> tierBits = new ConcurrentHashMap<>();

  /**
   * Object {@code object} of {@code bucket} is being stored under {@code key}: it is listed once
   * a tier holds it
   * ({@link #stored}), and its tag is ready for a tier that writes it meanwhile.
   *
   * @return the object as listed, for {@link #written}
   */
  Listed writing(BlockKey key, String bucket, StoredObject object) {
    Listed listed = new Listed(bucket, object.key(), object.length(), object.crc32c(),
        object.lastModified());
    writing.put(key, listed);
    return listed;
  }

  /** The write of {@code object} under {@code key} has ended, stored or not. */
  void written(BlockKey key, Listed object) {
    writing.remove(key, object);
  }

  /** The objects of {@code bucket} by name, sorted; a view that changes as objects come and go. */
  NavigableMap<String, Listed> bucket(String bucket) {
    NavigableMap<String, Listed> names = byBucket.get(bucket);
    return names != null ? names : Collections.emptyNavigableMap();
  }

  @Override
  public void stored(String tier, BlockKey key) {
    Listed now = writing.get(key);
    if (now != null) {
      hold(key, now, tier);
    } else {
      held.computeIfPresent(key, (k, h) -> new Held(h.object(), h.tiers() | bit(tier)));
    }
  }

  @Override
  public void removed(String tier, BlockKey key) {
    held.computeIfPresent(key, (k, h) -> {
      int left = h.tiers() & ~bit(tier);
      if (left != 0) {
        return new Held(h.object(), left);
      }
      ConcurrentSkipListMap<String, Listed> names = byBucket.get(h.object().bucket());
      if (names != null) {
        names.remove(h.object().name(), h.object());
      }
      return null;
    });
  }

  @Override
  public byte[] tagOf(BlockKey key) {
    Listed o = writing.get(key);
    if (o == null) {
      Held h = held.get(key);
      o = h == null ? null : h.object();
    }
    return o == null ? null : tag(o);
  }

  @Override
  public void found(String tier, BlockKey key, byte[] tag) {
    Listed o = fromTag(tag);
    if (o != null) {
      hold(key, o, tier);
    }
  }

  /** Lists {@code object} as held by {@code tier}, in place of what its key held before. */
  private void hold(BlockKey key, Listed object, String tier) {
    held.compute(key, (k, h) -> {
      ConcurrentSkipListMap<String, Listed> names =
          byBucket.computeIfAbsent(object.bucket(), b -> new ConcurrentSkipListMap<>());
      if (h != null && !h.object().equals(object)) {
        names.remove(h.object().name(), h.object());
      }
      names.put(object.name(), object);
      int tiers = h != null && h.object().equals(object) ? h.tiers() : 0;
      return new Held(object, tiers | bit(tier));
    });
  }

  private int bit(String tier) {
    Integer b = tierBits.get(tier);
    return b != null ? b : newBit(tier);
  }

  private synchronized int newBit(String tier) {
    return tierBits.computeIfAbsent(tier, t -> 1 << Math.min(30, tierBits.size()));
  }

  static byte[] tag(Listed o) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + o.name().length());
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeByte(TAG_FORMAT);
      out.writeUTF(o.bucket());
      out.writeUTF(o.name());
      out.writeLong(o.length());
      out.writeInt(o.crc32c());
      out.writeLong(o.lastModified().toEpochMilli());
    } catch (IOException e) {
      return null;
    }
    return bytes.size() <= MAX_TAG_BYTES ? bytes.toByteArray() : null;
  }

  /** The object a tier kept as {@code tag}; null for a tag of another format. */
  static Listed fromTag(byte[] tag) {
    if (tag == null || tag.length == 0 || tag[0] != TAG_FORMAT) {
      return null;
    }
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(tag))) {
      in.readByte();
      Listed o = new Listed(in.readUTF(), in.readUTF(), in.readLong(), in.readInt(),
          Instant.ofEpochMilli(in.readLong()));
      return in.available() == 0 ? o : null;
    } catch (IOException e) {
      return null;
    }
  }
}
