package dev.kvcache.ram;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;
import dev.kvcache.BlockKey;
import dev.kvcache.internal.memory.OffHeapBlock;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentMap;
import java.util.function.BiConsumer;

/**
 * {@link RamPolicy#W_TINY_LFU}: a Caffeine cache bounded by weight is the index and the policy.
 * Caffeine's weight total may overshoot while its maintenance is pending; it runs that maintenance
 * on the calling thread (usually the put that caused it, sometimes a read or delete), so the
 * eviction callback runs on the caller's thread.
 */
final class CaffeineRamIndex implements RamIndex {

  private final Cache<BlockKey, OffHeapBlock> cache;
  private final ConcurrentMap<BlockKey, OffHeapBlock> map;
  private final BiConsumer<BlockKey, OffHeapBlock> onEvicted;

  CaffeineRamIndex(long maxBytes, BiConsumer<BlockKey, OffHeapBlock> onEvicted) {
    this.onEvicted = onEvicted;
    this.cache = Caffeine.newBuilder()
        .maximumWeight(maxBytes)
        .weigher((BlockKey key, OffHeapBlock block) -> block.allocatedBytes())
        .executor(Runnable::run)
        .evictionListener((BlockKey key, OffHeapBlock block, RemovalCause cause) -> {
          if (cause.wasEvicted()) {
            onEvicted.accept(key, block);
          }
        })
        .build();
    this.map = cache.asMap();
  }

  @Override
  public OffHeapBlock get(BlockKey key) {
    return cache.getIfPresent(key);
  }

  @Override
  public OffHeapBlock peek(BlockKey key) {
    return cache.policy().getIfPresentQuietly(key);
  }

  @Override
  public boolean containsKey(BlockKey key) {
    return map.containsKey(key);
  }

  @Override
  public OffHeapBlock put(BlockKey key, OffHeapBlock block) {
    return map.put(key, block);
  }

  @Override
  public boolean remove(BlockKey key, OffHeapBlock block) {
    return map.remove(key, block);
  }

  @Override
  public OffHeapBlock remove(BlockKey key) {
    return map.remove(key);
  }

  @Override
  public long evictColdest(BlockKey forKey) {
    Map<BlockKey, OffHeapBlock> coldest = cache.policy().eviction().orElseThrow().coldest(1);
    if (coldest.isEmpty()) {
      return -1;
    }
    Map.Entry<BlockKey, OffHeapBlock> victim = coldest.entrySet().iterator().next();
    boolean[] evicted = {false};
    // the callback runs inside the removal, as it does for Caffeine's own evictions
    map.computeIfPresent(victim.getKey(), (key, block) -> {
      if (block != victim.getValue()) {
        return block;
      }
      onEvicted.accept(key, block);
      evicted[0] = true;
      return null;
    });
    return evicted[0] ? victim.getValue().allocatedBytes() : 0;
  }

  @Override
  public Map<BlockKey, OffHeapBlock> hottestFirst() {
    return cache.policy().eviction().orElseThrow().hottest(Integer.MAX_VALUE);
  }

  @Override
  public List<BlockKey> keys() {
    return List.copyOf(map.keySet());
  }

  @Override
  public long bytes() {
    return cache.policy().eviction().orElseThrow().weightedSize().orElse(0);
  }

  @Override
  public int size() {
    return map.size();
  }

  @Override
  public void cleanUp() {
    cache.cleanUp();
  }
}
