/**
 * The contract of a tier: {@link dev.kvcache.spi.Tier} (a tier is a complete cache), how a
 * tier is opened from settings ({@link dev.kvcache.spi.TierFactory}, {@link
 * dev.kvcache.spi.TierSettings}), reports itself ({@link dev.kvcache.spi.TierVisitor}), offers
 * what it can do ({@link dev.kvcache.spi.NamespaceDrop}), hands evicted blocks down ({@link
 * dev.kvcache.spi.BlockEvictionListener}), and the parts every tier shares (pins, leases, writers,
 * counters, checksums, load rates).
 *
 * <p>May import: the JDK and the API ({@code dev.kvcache}).
 */
package dev.kvcache.spi;
