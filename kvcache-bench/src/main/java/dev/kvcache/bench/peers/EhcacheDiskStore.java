package dev.kvcache.bench.peers;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import org.ehcache.Cache;
import org.ehcache.PersistentCacheManager;
import org.ehcache.config.builders.CacheConfigurationBuilder;
import org.ehcache.config.builders.CacheManagerBuilder;
import org.ehcache.config.builders.ResourcePoolsBuilder;
import org.ehcache.config.units.EntryUnit;
import org.ehcache.config.units.MemoryUnit;
import org.ehcache.impl.config.store.disk.OffHeapDiskStoreConfiguration;

/**
 * Ehcache 3's disk tier (which requires a heap tier above it; given one entry, so reads come from
 * the disk). Values pass through the same buffer serializer as the off-heap peer. It is given
 * twice the capacity the other stores get: with the same, it evicts blocks of the working set.
 */
final class EhcacheDiskStore implements PeerStore {
  private final PersistentCacheManager manager;
  private final Cache<Long, ByteBuffer> cache;

  EhcacheDiskStore(Path dir, long capacityBytes) {
    manager =
        CacheManagerBuilder.newCacheManagerBuilder()
            .with(CacheManagerBuilder.persistence(dir.toFile()))
            .withCache(
                "blocks",
                CacheConfigurationBuilder.newCacheConfigurationBuilder(
                        Long.class,
                        ByteBuffer.class,
                        ResourcePoolsBuilder.newResourcePoolsBuilder()
                            .heap(1, EntryUnit.ENTRIES)
                            .disk(Math.max(16, 2 * capacityBytes >> 20), MemoryUnit.MB, false))
                    .withValueSerializer(new EhcacheStore.BufferSerializer())
                    // one segment: with the default 16, each holds a sixteenth of the capacity
                    // and evicts long before the whole is full
                    .withService(new OffHeapDiskStoreConfiguration(1)))
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
}
