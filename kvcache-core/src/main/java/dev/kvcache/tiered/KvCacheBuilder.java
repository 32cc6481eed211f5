package dev.kvcache.tiered;

import dev.kvcache.Namespace;
import dev.kvcache.ram.RamPolicy;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.seal.MasterKeys;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierFactory;
import dev.kvcache.spi.TierSettings;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Builds a cache: an off-heap RAM tier, alone or over lower tiers into which it spills the blocks
 * it evicts (see {@link TieredCache}). The one way a cache is assembled: {@link KvCacheConfig#of}
 * reads string settings into a builder, and a server feeds it its own.
 *
 * <pre>{@code
 * KvCache ramOnly = KvCacheBuilder.newBuilder().ramBytes(8L << 30).maxBlockBytes(32 << 20).build();
 * KvCache ramOverDisk = KvCacheBuilder.newBuilder().ramBytes(8L << 30)
 *     .lowerTier(DiskTier.open(DiskTierConfig.builder(dir, 1L << 40).build()))
 *     .build();
 * }</pre>
 *
 * <p>A lower tier is given either opened ({@link #lowerTier}) or as the kind and settings its
 * {@link TierFactory} opens it from ({@link #lower}); several lower tiers, added top to bottom,
 * stack: each is the upper tier of a {@link StackedTier} over the ones below it. Each setter checks
 * its value at once; {@link #config()} checks the largest block against the RAM budget.
 *
 * <p>The RAM budget is reserved as direct memory when the cache is built, so the JVM's {@code
 * -XX:MaxDirectMemorySize} (by default the maximum heap size) must allow it.
 */
public final class KvCacheBuilder {

  /** Default RAM budget: 256 MiB. */
  public static final long DEFAULT_RAM_BYTES = 256L << 20;

  long ramBytes = DEFAULT_RAM_BYTES;
  Integer maxBlockBytes;
  RamPolicy ramPolicy = RamTierConfig.DEFAULT_POLICY;
  Path ramSharedMemoryDir;
  final Map<Namespace, Long> ramQuotas = new LinkedHashMap<>();
  TieredCacheConfig tiered = TieredCacheConfig.defaults();
  StackedTierConfig stacked = StackedTierConfig.defaults();
  final List<LowerTier> lower = new ArrayList<>();
  final Map<String, Map<Namespace, Long>> lowerQuotas = new LinkedHashMap<>();
  MasterKeys masterKeys;
  final Set<Namespace> sealed = new LinkedHashSet<>();

  private KvCacheBuilder() {}

  /** A builder with every setting at its default: 256 MiB of RAM and no lower tier. */
  public static KvCacheBuilder newBuilder() {
    return new KvCacheBuilder();
  }

  /**
   * The off-heap RAM budget in bytes, payload and allocator rounding included (default 256 MiB).
   *
   * @throws IllegalArgumentException if a RAM tier cannot have that capacity
   */
  public KvCacheBuilder ramBytes(long ramBytes) {
    RamTierConfig.ofCapacity(ramBytes);
    this.ramBytes = ramBytes;
    return this;
  }

  /**
   * The largest block accepted, in bytes; default 64 MiB or the RAM budget if smaller. {@link
   * #config()} checks that RAM can hold it.
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
   * Which blocks the RAM tier keeps when full; default {@link RamPolicy#LRU} (see {@link
   * RamPolicy} for when to pick the other).
   */
  public KvCacheBuilder ramPolicy(RamPolicy ramPolicy) {
    this.ramPolicy = Objects.requireNonNull(ramPolicy, "ramPolicy");
    return this;
  }

  /**
   * Reserves RAM as files in {@code dir} (a tmpfs such as {@code /dev/shm}) that other processes
   * of the same user on this host may map, so that they copy leased blocks straight out of RAM;
   * null (the default) for private memory (see {@link RamTierConfig#sharedMemoryDir()}).
   *
   * @throws IllegalArgumentException if {@code dir} is not a directory
   */
  public KvCacheBuilder ramSharedMemory(Path dir) {
    if (dir != null && !Files.isDirectory(dir)) {
      throw new IllegalArgumentException("'" + dir + "' is not a directory (use a tmpfs such as"
          + " /dev/shm)");
    }
    this.ramSharedMemoryDir = dir;
    return this;
  }

  /**
   * The bytes of RAM {@code namespace}'s blocks may hold at most ({@link RamTierConfig#quotas()}):
   * at its quota it evicts its own coldest blocks, never another namespace's, and the namespaces
   * without a quota share what the quotas leave. None by default. {@link #config()} checks that
   * the quotas leave RAM to the others.
   *
   * @throws IllegalArgumentException if {@code bytes} is below one 4 KiB granule
   */
  public KvCacheBuilder ramQuota(Namespace namespace, long bytes) {
    Objects.requireNonNull(namespace, "namespace");
    if (bytes < RamTierConfig.MIN_QUOTA_BYTES) {
      throw new IllegalArgumentException("the RAM quota of " + namespace + " is " + bytes
          + " bytes; it must be at least " + RamTierConfig.MIN_QUOTA_BYTES);
    }
    ramQuotas.put(namespace, bytes);
    return this;
  }

  /**
   * The bytes {@code namespace}'s blocks may take at most in the lower tier of {@code kind}
   * (opened from settings, {@link #lower(String, TierSettings)}): the disk tier ({@code disk})
   * gives such a namespace super-blocks of its own and reclaims its own oldest at its quota, the
   * object tier ({@code s3}) deletes its own least recently used objects at its quota (of the
   * whole bucket), never another namespace's; the namespaces without a quota share the rest of
   * the tier's capacity and borrow what the quotas leave unused. The tier's
   * factory checks the range ({@code TierFactory#open(TierSettings, int, Map)}); {@link #config()}
   * checks that a tier of that kind is below RAM.
   *
   * @throws IllegalArgumentException if {@code bytes} is not positive
   */
  public KvCacheBuilder quota(String kind, Namespace namespace, long bytes) {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(namespace, "namespace");
    if (bytes <= 0) {
      throw new IllegalArgumentException("the " + kind + " quota of " + namespace + " is " + bytes
          + " bytes; it must be positive");
    }
    lowerQuotas.computeIfAbsent(kind, k -> new LinkedHashMap<>()).put(namespace, bytes);
    return this;
  }

  /**
   * Seals the blocks of {@code namespaces} at rest in the lower tiers: AES-256-GCM under a key per
   * namespace derived from {@code masterKeys} ({@code dev.kvcache.seal.Sealer}). RAM keeps them as
   * they are. Every lower tier opened from settings must seal them (the disk tier does; a tier
   * that cannot refuses to open, rather than take them as they are). None by default.
   */
  public KvCacheBuilder sealing(MasterKeys masterKeys, Collection<Namespace> namespaces) {
    this.masterKeys = Objects.requireNonNull(masterKeys, "masterKeys");
    this.sealed.addAll(namespaces);
    return this;
  }

  /**
   * Adds a tier below RAM, and below the lower tiers added before: it receives the blocks the
   * tier above evicts and serves them back. The cache takes ownership and closes it. None by
   * default: evicted blocks are dropped.
   *
   * @throws IllegalArgumentException if a tier of the same kind ({@link Tier#name()}) is already
   *     added
   */
  public KvCacheBuilder lowerTier(Tier tier) {
    Objects.requireNonNull(tier, "lowerTier");
    return add(new LowerTier(tier.name(), null, tier));
  }

  /**
   * Adds a tier below RAM, and below the lower tiers added before, opened when the cache is built
   * by the {@link TierFactory} of {@code kind} from {@code settings}, whose errors name the
   * settings as {@code settings} names them.
   *
   * @throws IllegalArgumentException if {@code kind} is not a tier kind's name ({@code a-z 0-9
   *     -}), or a tier of that kind is already added
   */
  public KvCacheBuilder lower(String kind, TierSettings settings) {
    Objects.requireNonNull(kind, "kind");
    if (!kind.matches("[a-z0-9-]+") || "none".equals(kind)) {
      throw new IllegalArgumentException("'" + kind + "' is not a tier kind, such as disk or s3");
    }
    return add(new LowerTier(kind, Objects.requireNonNull(settings, "settings"), null));
  }

  private KvCacheBuilder add(LowerTier tier) {
    for (LowerTier t : lower) {
      if (t.kind().equals(tier.kind())) {
        throw new IllegalArgumentException("a '" + tier.kind() + "' tier is already below RAM");
      }
    }
    lower.add(tier);
    return this;
  }

  /**
   * How blocks move between RAM and the tiers below it (default {@link
   * TieredCacheConfig#defaults()}); applies once there is a lower tier. The setters below change
   * one value of it each.
   */
  public KvCacheBuilder tiered(TieredCacheConfig tiered) {
    this.tiered = Objects.requireNonNull(tiered, "tiered");
    return this;
  }

  /**
   * How many evicted blocks may wait to be written to the lower tier; default {@value
   * TieredCacheConfig#DEFAULT_SPILL_QUEUE_BLOCKS}; they also pin at most a quarter of RAM.
   *
   * @throws IllegalArgumentException if not positive
   */
  public KvCacheBuilder spillQueueBlocks(int spillQueueBlocks) {
    tiered = tiered.withSpillQueueBlocks(spillQueueBlocks);
    return this;
  }

  /**
   * How long a put may wait for the spill threads to make room; default 200 ms. Blocks evicted
   * while the queue is still full are dropped (see {@link TieredCacheConfig#spillQueueWait()}).
   *
   * @throws IllegalArgumentException if negative
   */
  public KvCacheBuilder spillQueueWait(Duration spillQueueWait) {
    tiered = tiered.withSpillQueueWait(spillQueueWait);
    return this;
  }

  /** Whether a read served by the lower tier copies the block back into RAM; default true. */
  public KvCacheBuilder promoteOnLowerHit(boolean promoteOnLowerHit) {
    tiered = tiered.withPromoteOnLowerHit(promoteOnLowerHit);
    return this;
  }

  /**
   * Whether closing the cache first writes what RAM holds to the lower tier, so that a disk tier
   * serves it after a restart; default true (see {@link TieredCacheConfig#spillOnClose()}).
   */
  public KvCacheBuilder spillOnClose(boolean spillOnClose) {
    tiered = tiered.withSpillOnClose(spillOnClose);
    return this;
  }

  /**
   * What a put's answer promises about the lower tier, and so what a crash can lose; default
   * {@link Durability#RAM_FIRST} (see {@link Durability}).
   */
  public KvCacheBuilder durability(Durability durability) {
    tiered = tiered.withDurability(durability);
    return this;
  }

  /**
   * Threads that write blocks on their way from RAM to the lower tier; default {@value
   * TieredCacheConfig#DEFAULT_SPILL_THREADS} (see {@link TieredCacheConfig#spillThreads()}).
   *
   * @throws IllegalArgumentException if not between 1 and {@value
   *     TieredCacheConfig#MAX_SPILL_THREADS}
   */
  public KvCacheBuilder spillThreads(int spillThreads) {
    tiered = tiered.withSpillThreads(spillThreads);
    return this;
  }

  /**
   * How each of several lower tiers uploads to the ones below it (default {@link
   * StackedTierConfig#defaults()}); applies once there are two.
   */
  public KvCacheBuilder stacked(StackedTierConfig stacked) {
    this.stacked = Objects.requireNonNull(stacked, "stacked");
    return this;
  }

  /**
   * The cache these settings describe, not yet opened.
   *
   * @throws IllegalArgumentException if the largest block does not fit the RAM budget, the RAM
   *     quotas leave none of it to the namespaces without one, or quotas are set for a lower
   *     tier that is not there
   */
  public KvCacheConfig config() {
    RamTierConfig.ofCapacity(ramBytes).withQuotas(ramQuotas);
    for (String kind : lowerQuotas.keySet()) {
      if (lower.stream().noneMatch(t -> t.kind().equals(kind) && t.settings() != null)) {
        throw new IllegalArgumentException("quotas are set for the " + kind + " tier, but no tier"
            + " of that kind is below RAM opened from settings (a tier given opened keeps the"
            + " quotas it was opened with)");
      }
    }
    if (maxBlockBytes != null) {
      try {
        RamTierConfig.ofCapacity(ramBytes).withMaxBlockBytes(maxBlockBytes);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("the largest block (" + maxBlockBytes
            + " bytes) does not fit a RAM tier of " + ramBytes + " bytes: " + e.getMessage()
            + "; lower the largest block or raise the RAM budget", e);
      }
    }
    return new KvCacheConfig(this);
  }

  /**
   * Opens the lower tiers, if any, reserves the memory and returns the cache: a tier itself, whose
   * {@link Tier#describe} reports every tier of the stack.
   *
   * @throws IllegalArgumentException if a setting is out of range
   * @throws IllegalStateException if the direct memory cannot be reserved, or no {@link
   *     TierFactory} of a lower tier's kind is on the class path
   * @throws UncheckedIOException if a lower tier's storage cannot be opened
   */
  public Tier build() {
    try {
      return config().open();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A tier below RAM: opened already ({@code tier}), or by its kind's factory from settings. */
  record LowerTier(String kind, TierSettings settings, Tier tier) {}
}
