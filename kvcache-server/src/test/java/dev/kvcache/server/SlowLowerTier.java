package dev.kvcache.server;

import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.server.cache.CacheFactory;
import dev.kvcache.spi.Tier;
import dev.kvcache.tiered.Durability;
import dev.kvcache.tiered.GatedTier;
import dev.kvcache.tiered.TieredCache;
import dev.kvcache.tiered.TieredCacheConfig;
import io.micronaut.context.annotation.Bean;
import io.micronaut.context.annotation.Context;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Replaces;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.annotation.Value;
import java.time.Duration;

/**
 * The server's cache over a lower tier whose writes each take {@code test.slow-lower-put}, as a
 * slow or stalled disk's do, written behind with a window of two blocks and one spill thread: so
 * that the write-behind backlog is full at once and stays so. Its reads each take {@code
 * test.slow-lower-read} (default none), as a cold disk's or an object store's do; the blocks read
 * are not promoted into RAM, so that each read of them takes that long. Only when {@code
 * test.slow-lower-put} is given.
 */
@Factory
@Requires(property = "test.slow-lower-put")
class SlowLowerTier {

  @Context
  @Bean(preDestroy = "close")
  @Replaces(bean = Tier.class, factory = CacheFactory.class)
  Tier cache(@Value("${test.slow-lower-put}") Duration delay,
      @Value("${test.slow-lower-read:0ms}") Duration readDelay) {
    GatedTier lower = new GatedTier(
        new RamTier(RamTierConfig.ofCapacity(256L << 20).withMaxBlockBytes(8 << 20)));
    lower.putDelayMillis = delay.toMillis();
    lower.readDelayMillis = readDelay.toMillis();
    return new TieredCache(RamTierConfig.ofCapacity(64L << 20).withMaxBlockBytes(8 << 20), lower,
        new TieredCacheConfig(2, Duration.ofSeconds(30), false, true, Durability.WRITE_BEHIND, 1));
  }
}
