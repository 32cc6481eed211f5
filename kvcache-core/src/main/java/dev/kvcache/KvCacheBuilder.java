package dev.kvcache;

import dev.kvcache.ram.RamPolicy;
import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.spi.Tier;
import dev.kvcache.tiered.Durability;
import dev.kvcache.tiered.TieredCache;
import dev.kvcache.tiered.TieredCacheConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * Builds an embedded {@link KvCache}: an off-heap RAM tier, alone or over a lower tier (the disk
 * tier, {@code dev.kvcache.disk.DiskTier} in kvcache-disk) into which it spills the blocks it
 * evicts (see {@link TieredCache}).
 *
 * <pre>{@code
 * KvCache ramOnly = KvCache.builder().ramBytes(8L << 30).maxBlockBytes(32 << 20).build();
 * KvCache ramOverDisk = KvCache.builder().ramBytes(8L << 30)
 *     .lowerTier(DiskTier.open(DiskTierConfig.builder(dir, 1L << 40).build()))
 *     .build();
 * }</pre>
 *
 * <p>The RAM budget is reserved as direct memory when {@link #build()} runs, so the JVM's {@code
 * -XX:MaxDirectMemorySize} (by default the maximum heap size) must allow it.
 */
public final class KvCacheBuilder {

  /** Default RAM budget: 256 MiB. */
  public static final long DEFAULT_RAM_BYTES = 256L << 20;

  private long ramBytes = DEFAULT_RAM_BYTES;
  private RamPolicy ramPolicy = RamTierConfig.DEFAULT_POLICY;
  private Integer maxBlockBytes;
  private Tier lowerTier;
  private int spillQueueBlocks = TieredCacheConfig.DEFAULT_SPILL_QUEUE_BLOCKS;
  private Duration spillQueueWait = TieredCacheConfig.DEFAULT_SPILL_QUEUE_WAIT;
  private boolean promoteOnLowerHit = true;
  private boolean spillOnClose = true;
  private Durability durability = Durability.RAM_FIRST;
  private int spillThreads = TieredCacheConfig.DEFAULT_SPILL_THREADS;
  private Path ramSharedMemoryDir;

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
   * A tier below RAM that receives the blocks RAM evicts and serves them back; the cache takes
   * ownership and closes it. None by default: evicted blocks are dropped.
   */
  public KvCacheBuilder lowerTier(Tier lowerTier) {
    this.lowerTier = Objects.requireNonNull(lowerTier, "lowerTier");
    return this;
  }

  /**
   * How many evicted blocks may wait to be written to the lower tier; default {@value
   * TieredCacheConfig#DEFAULT_SPILL_QUEUE_BLOCKS}; they also pin at most a quarter of RAM.
   */
  public KvCacheBuilder spillQueueBlocks(int spillQueueBlocks) {
    this.spillQueueBlocks = spillQueueBlocks;
    return this;
  }

  /**
   * How long a put may wait for the spill threads to make room; default 200 ms. Blocks evicted
   * while the queue is still full are dropped (see {@link TieredCacheConfig#spillQueueWait()}).
   */
  public KvCacheBuilder spillQueueWait(Duration spillQueueWait) {
    this.spillQueueWait = Objects.requireNonNull(spillQueueWait, "spillQueueWait");
    return this;
  }

  /** Whether a read served by the lower tier copies the block back into RAM; default true. */
  public KvCacheBuilder promoteOnLowerHit(boolean promoteOnLowerHit) {
    this.promoteOnLowerHit = promoteOnLowerHit;
    return this;
  }

  /**
   * Whether closing the cache first writes what RAM holds to the lower tier, so that a disk tier
   * serves it after a restart; default true (see {@link TieredCacheConfig#spillOnClose()}).
   */
  public KvCacheBuilder spillOnClose(boolean spillOnClose) {
    this.spillOnClose = spillOnClose;
    return this;
  }

  /**
   * Which blocks the RAM tier keeps when full; default {@link RamPolicy#LRU} (see {@link
   * RamPolicy} for when to pick the other).
   */
  public KvCacheBuilder ramPolicy(RamPolicy ramPolicy) {
    this.ramPolicy = Objects.requireNonNull(ramPolicy, "ramPolicy");
    return this;
  }

  /**
   * What a put's answer promises about the lower tier, and so what a crash can lose; default
   * {@link Durability#RAM_FIRST} (see {@link Durability}).
   */
  public KvCacheBuilder durability(Durability durability) {
    this.durability = Objects.requireNonNull(durability, "durability");
    return this;
  }

  /**
   * Reserves RAM as files in {@code dir} (a tmpfs such as {@code /dev/shm}) that other processes
   * of the same user on this host may map, so that they copy leased blocks straight out of RAM;
   * null (the default) for private memory (see {@link RamTierConfig#sharedMemoryDir()}).
   */
  public KvCacheBuilder ramSharedMemory(Path dir) {
    this.ramSharedMemoryDir = dir;
    return this;
  }

  /**
   * Threads that write blocks on their way from RAM to the lower tier; default {@value
   * TieredCacheConfig#DEFAULT_SPILL_THREADS} (see {@link TieredCacheConfig#spillThreads()}).
   */
  public KvCacheBuilder spillThreads(int spillThreads) {
    this.spillThreads = spillThreads;
    return this;
  }

  /**
   * Reserves the memory and returns the cache.
   *
   * @throws IllegalArgumentException if a setting is out of range
   * @throws IllegalStateException if the direct memory cannot be reserved
   */
  public KvCache build() {
    RamTierConfig config = RamTierConfig.ofCapacity(ramBytes).withPolicy(ramPolicy)
        .withSharedMemory(ramSharedMemoryDir);
    if (maxBlockBytes != null) {
      config = config.withMaxBlockBytes(maxBlockBytes);
    }
    if (lowerTier == null) {
      return new RamTier(config);
    }
    return new TieredCache(config, lowerTier, new TieredCacheConfig(spillQueueBlocks,
        spillQueueWait, promoteOnLowerHit, spillOnClose, durability, spillThreads));
  }
}
