package dev.kvcache.bench.peers;

import java.nio.ByteBuffer;
import java.nio.file.Path;

/**
 * The two operations the peer comparison measures, as each library is best used for them: put
 * the bytes of a direct buffer under a numeric id, and copy the bytes stored under an id into a
 * caller's direct buffer (what an engine needs before a device transfer).
 */
public interface PeerStore extends AutoCloseable {

  /** Stores {@code src}'s remaining bytes; false if the store refused them. */
  boolean put(long id, ByteBuffer src);

  /**
   * Copies the block into {@code dst} from position 0, leaving the position after its last byte;
   * false on a miss.
   */
  boolean getInto(long id, ByteBuffer dst);

  @Override
  void close();

  /** Builds the named peer with room for at least {@code capacityBytes} of payload. */
  static PeerStore create(String name, long capacityBytes, int blockSizeBytes, int blocks) {
    switch (name) {
      case "kvcache":
        return new KvCacheStore(capacityBytes, blockSizeBytes);
      case "ehcache":
        return new EhcacheStore(capacityBytes);
      case "ohc":
        return new OhcStore(capacityBytes, blockSizeBytes);
      case "chronicle-map":
        return new ChronicleMapStore(blockSizeBytes, blocks);
      default:
        throw new IllegalArgumentException("unknown peer '" + name + "'");
    }
  }

  /** Builds the named disk store in directory {@code dir}, with room for {@code capacityBytes}. */
  static PeerStore createOnDisk(String name, Path dir, long capacityBytes, int blockSizeBytes) {
    switch (name) {
      case "kvcache":
        return new KvCacheDiskStore(dir, capacityBytes, blockSizeBytes);
      case "rocksdb":
        return new RocksDbStore(dir);
      case "ehcache":
        return new EhcacheDiskStore(dir, capacityBytes);
      case "files":
        return new FilePerBlockStore(dir);
      default:
        throw new IllegalArgumentException("unknown disk peer '" + name + "'");
    }
  }
}
