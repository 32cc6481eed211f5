package dev.kvcache.bench.peers;

import java.nio.ByteBuffer;
import org.ehcache.Cache;
import org.ehcache.CacheManager;
import org.ehcache.config.builders.CacheConfigurationBuilder;
import org.ehcache.config.builders.CacheManagerBuilder;
import org.ehcache.config.builders.ResourcePoolsBuilder;
import org.ehcache.config.units.MemoryUnit;
import org.ehcache.spi.serialization.Serializer;

/**
 * Ehcache 3 with an off-heap-only resource pool. Values are ByteBuffers with a serializer that
 * hands Ehcache the caller's buffer (Ehcache copies it into its off-heap store once); reading
 * returns a heap copy that is then copied into the destination, since Ehcache never exposes its
 * off-heap memory.
 */
final class EhcacheStore implements PeerStore {
  private final CacheManager manager;
  private final Cache<Long, ByteBuffer> cache;

  EhcacheStore(long capacityBytes) {
    long megabytes = Math.max(16, capacityBytes >> 20);
    manager =
        CacheManagerBuilder.newCacheManagerBuilder()
            .withCache(
                "blocks",
                CacheConfigurationBuilder.newCacheConfigurationBuilder(
                        Long.class,
                        ByteBuffer.class,
                        ResourcePoolsBuilder.newResourcePoolsBuilder()
                            .offheap(megabytes, MemoryUnit.MB))
                    .withValueSerializer(new BufferSerializer()))
            .build(true);
    cache = manager.getCache("blocks", Long.class, ByteBuffer.class);
  }

  @Override
  public boolean put(long id, ByteBuffer src) {
    cache.put(id, src.duplicate());
    return true;
  }

  @Override
  public boolean getInto(long id, ByteBuffer dst) {
    ByteBuffer value = cache.get(id);
    if (value == null) {
      return false;
    }
    dst.clear();
    dst.put(value);
    return true;
  }

  @Override
  public void close() {
    manager.close();
  }

  /** Passes buffers through; Ehcache copies them into and out of its own memory. */
  public static final class BufferSerializer implements Serializer<ByteBuffer> {
    public BufferSerializer() {}

    public BufferSerializer(ClassLoader loader) {}

    @Override
    public ByteBuffer serialize(ByteBuffer object) {
      return object.duplicate();
    }

    @Override
    public ByteBuffer read(ByteBuffer binary) {
      ByteBuffer copy = ByteBuffer.allocate(binary.remaining());
      copy.put(binary).flip();
      return copy;
    }

    @Override
    public boolean equals(ByteBuffer object, ByteBuffer binary) {
      return object.equals(binary);
    }
  }
}
