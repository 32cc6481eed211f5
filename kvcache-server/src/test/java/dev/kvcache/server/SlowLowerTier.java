package dev.kvcache.server;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.CacheStats;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.PutStatus;
import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.spi.Tier;
import dev.kvcache.tiered.Durability;
import dev.kvcache.tiered.TieredCache;
import dev.kvcache.tiered.TieredCacheConfig;
import io.micronaut.context.annotation.Bean;
import io.micronaut.context.annotation.Context;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Replaces;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.annotation.Value;
import java.nio.ByteBuffer;
import java.time.Duration;

/**
 * A lower tier whose writes each take {@code delay}, as a slow or stalled disk's do, over a RAM
 * tier; and the factory that puts it under the server's cache, written behind with a window of
 * two blocks and one spill thread, when {@code test.slow-lower-put} is set: so that the write-behind
 * backlog is full at once and stays so.
 */
final class SlowLowerTier implements Tier {

  private final RamTier inner;
  private final Duration delay;

  SlowLowerTier(RamTier inner, Duration delay) {
    this.inner = inner;
    this.delay = delay;
  }

  @Factory
  @Requires(property = "test.slow-lower-put")
  static class CacheOverSlowTier {
    @Context
    @Bean(preDestroy = "close")
    @Replaces(bean = KvCache.class, factory = CacheFactory.class)
    KvCache cache(@Value("${test.slow-lower-put}") Duration delay) {
      Tier lower = new SlowLowerTier(
          new RamTier(RamTierConfig.ofCapacity(256L << 20).withMaxBlockBytes(8 << 20)), delay);
      return new TieredCache(RamTierConfig.ofCapacity(64L << 20).withMaxBlockBytes(8 << 20), lower,
          new TieredCacheConfig(2, Duration.ofSeconds(30), false, true, Durability.WRITE_BEHIND, 1));
    }
  }

  @Override
  public PutStatus put(BlockKey key, ByteBuffer src) {
    try {
      Thread.sleep(delay.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return inner.put(key, src);
  }

  @Override
  public String name() {
    return "slow";
  }

  @Override
  public long capacityBytes() {
    return inner.capacityBytes();
  }

  @Override
  public int maxBlockBytes() {
    return inner.maxBlockBytes();
  }

  @Override
  public BlockLease get(BlockKey key) {
    return inner.get(key);
  }

  @Override
  public GetStatus getInto(BlockKey key, ByteBuffer dst) {
    return inner.getInto(key, dst);
  }

  @Override
  public boolean contains(BlockKey key) {
    return inner.contains(key);
  }

  @Override
  public boolean delete(BlockKey key) {
    return inner.delete(key);
  }

  @Override
  public CacheStats stats() {
    return inner.stats();
  }

  @Override
  public void close() {
    inner.close();
  }
}
