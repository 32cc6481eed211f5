/**
 * How tiers stack into one cache, and the one place a cache is assembled: {@link
 * dev.kvcache.tiered.KvCacheBuilder} and {@link dev.kvcache.tiered.KvCacheConfig} (settings),
 * {@link dev.kvcache.tiered.TieredCache} (RAM over a lower tier, with its spill queue and
 * durability modes) and {@link dev.kvcache.tiered.StackedTier} (a tier over a backing tier, with
 * its uploads).
 *
 * <p>May import: the API, {@code spi}, {@code ram}; lower tiers of other modules only through {@code spi} (their factories are found with {@link java.util.ServiceLoader}).
 */
package dev.kvcache.tiered;
