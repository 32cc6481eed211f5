/**
 * The off-heap RAM tier: payloads in direct memory reserved up front, an index and eviction
 * policy on the heap ({@link dev.kvcache.ram.RamIndex}).
 *
 * <p>May import: the API, {@code spi}, {@code internal.memory}, Caffeine.
 */
package dev.kvcache.ram;
