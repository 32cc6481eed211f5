package dev.kvcache;

import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;

/**
 * Builds an embedded {@link KvCache}. Today the cache is a single off-heap RAM tier; the disk tier
 * joins it below RAM when configured (see the project README).
 *
 * <pre>{@code
 * KvCache cache = KvCache.builder().ramBytes(8L << 30).maxBlockBytes(32 << 20).build();
 * }</pre>
 *
 * <p>The RAM budget is reserved as direct memory when {@link #build()} runs, so the JVM's {@code
 * -XX:MaxDirectMemorySize} (by default the maximum heap size) must allow it.
 */
public final class KvCacheBuilder {

  /** Default RAM budget: 256 MiB. */
  public static final long DEFAULT_RAM_BYTES = 256L << 20;

  private long ramBytes = DEFAULT_RAM_BYTES;
  private Integer maxBlockBytes;

  KvCacheBuilder() {}

  /** The off-heap RAM budget in bytes, payload and allocator rounding included. */
  public KvCacheBuilder ramBytes(long ramBytes) {
    this.ramBytes = ramBytes;
    return this;
  }

  /**
   * The largest block accepted, in bytes; default 64 MiB or the RAM budget if smaller.
   *
   * @throws IllegalArgumentException if {@code maxBlockBytes} is not positive
   */
  public KvCacheBuilder maxBlockBytes(int maxBlockBytes) {
    if (maxBlockBytes < 1) {
      throw new IllegalArgumentException("maxBlockBytes must be positive, got " + maxBlockBytes);
    }
    this.maxBlockBytes = maxBlockBytes;
    return this;
  }

  /**
   * Reserves the memory and returns the cache.
   *
   * @throws IllegalArgumentException if a setting is out of range
   * @throws IllegalStateException if the direct memory cannot be reserved
   */
  public KvCache build() {
    RamTierConfig config = RamTierConfig.ofCapacity(ramBytes);
    if (maxBlockBytes != null) {
      config = config.withMaxBlockBytes(maxBlockBytes);
    }
    return new RamTier(config);
  }
}
