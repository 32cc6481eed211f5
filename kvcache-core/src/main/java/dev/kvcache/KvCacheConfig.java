package dev.kvcache;

import dev.kvcache.ram.RamPolicy;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierFactory;
import dev.kvcache.spi.TierSettings;
import dev.kvcache.tiered.Durability;
import dev.kvcache.tiered.StackedTier;
import dev.kvcache.tiered.StackedTierConfig;
import dev.kvcache.tiered.TieredCacheConfig;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.ServiceLoader;
import java.util.TreeMap;

/**
 * A cache described by string settings, as a properties file or a server's configuration holds
 * them: RAM only, or RAM over a lower tier opened by the {@link TierFactory} of its kind (the disk
 * tier's comes with kvcache-disk, the object tier's with kvcache-s3). Several lower tiers, listed
 * top to bottom ({@code lower = disk, s3}), stack: each is the upper tier of a {@link StackedTier}
 * over the ones below it.
 *
 * <pre>
 * ram.bytes = 8GiB
 * ram.max-block-bytes = 32MiB
 * ram.policy = lru
 * lower = disk
 * disk.dir = /var/cache/kvcache
 * disk.capacity = 200GiB
 * disk.sync-policy = periodic
 * tiered.spill-queue-wait = 200ms
 * </pre>
 *
 * <table>
 *   <caption>Settings</caption>
 *   <tr><th>key</th><th>meaning</th><th>default</th></tr>
 *   <tr><td>{@code ram.bytes}</td><td>RAM budget</td><td>256MiB</td></tr>
 *   <tr><td>{@code ram.max-block-bytes}</td><td>largest block</td><td>64MiB, or the RAM budget if smaller</td></tr>
 *   <tr><td>{@code ram.policy}</td><td>{@code lru} or {@code w_tiny_lfu}: see {@link RamPolicy}</td><td>lru</td></tr>
 *   <tr><td>{@code ram.shared-memory-dir}</td><td>a tmpfs directory where RAM is reserved as files
 *       other local processes may map: see {@link RamTierConfig#sharedMemoryDir()}</td><td>none</td></tr>
 *   <tr><td>{@code lower}</td><td>{@code none}, or the kinds of the tiers below RAM, top to bottom
 *       ({@code disk}; {@code disk, s3})</td><td>none</td></tr>
 *   <tr><td>{@code tiered.spill-queue-blocks}</td><td>see {@link TieredCacheConfig}</td><td>64</td></tr>
 *   <tr><td>{@code tiered.spill-queue-wait}</td><td>see {@link TieredCacheConfig}</td><td>200ms</td></tr>
 *   <tr><td>{@code tiered.promote-on-lower-hit}</td><td>see {@link TieredCacheConfig}</td><td>true</td></tr>
 *   <tr><td>{@code tiered.spill-on-close}</td><td>see {@link TieredCacheConfig}</td><td>true</td></tr>
 *   <tr><td>{@code tiered.durability}</td><td>{@code ram_first}, {@code write_behind} or
 *       {@code write_through}: see {@link Durability}</td><td>ram_first</td></tr>
 *   <tr><td>{@code tiered.spill-threads}</td><td>see {@link TieredCacheConfig}</td><td>2</td></tr>
 *   <tr><td>{@code stacked.upload-queue-blocks}</td><td>see {@link StackedTierConfig}</td><td>1024</td></tr>
 *   <tr><td>{@code stacked.upload-threads}</td><td>see {@link StackedTierConfig}</td><td>8</td></tr>
 *   <tr><td>{@code stacked.close-wait}</td><td>see {@link StackedTierConfig}</td><td>30s</td></tr>
 *   <tr><td>{@code stacked.upload}</td><td>{@code every_block} or {@code evicted}: see {@link
 *       StackedTierConfig.Upload}</td><td>{@code every_block}</td></tr>
 *   <tr><td>{@code <kind>.*}</td><td>the lower tier's own settings, read by its factory</td><td></td></tr>
 * </table>
 *
 * Sizes take a unit (B, KiB, MiB, GiB, TiB), durations one of ms, s, m, h. A setting that is
 * misspelt, malformed or belongs to no tier in use is an error naming it.
 */
public final class KvCacheConfig {

  private final long ramBytes;
  private final Integer maxBlockBytes;
  private final RamPolicy ramPolicy;
  private final Path ramSharedMemoryDir;
  private final List<String> lower;
  private final TieredCacheConfig tiered;
  private final StackedTierConfig stacked;
  private final List<TierSettings> lowerSettings = new ArrayList<>();

  private KvCacheConfig(TierSettings settings) {
    this.ramBytes = settings.bytes("ram.bytes", KvCacheBuilder.DEFAULT_RAM_BYTES);
    this.maxBlockBytes = settings.has("ram.max-block-bytes")
        ? settings.intBytes("ram.max-block-bytes", 0)
        : null;
    this.ramPolicy = settings.choice("ram.policy", RamPolicy.class, RamTierConfig.DEFAULT_POLICY);
    this.ramSharedMemoryDir = sharedMemoryDir(settings.string("ram.shared-memory-dir", ""));
    this.lower = kinds(settings.string("lower", "none"));
    TieredCacheConfig defaults = TieredCacheConfig.defaults();
    this.tiered = new TieredCacheConfig(
        settings.integer("tiered.spill-queue-blocks", defaults.spillQueueBlocks()),
        settings.duration("tiered.spill-queue-wait", defaults.spillQueueWait()),
        settings.bool("tiered.promote-on-lower-hit", defaults.promoteOnLowerHit()),
        settings.bool("tiered.spill-on-close", defaults.spillOnClose()),
        settings.choice("tiered.durability", Durability.class, defaults.durability()),
        spillThreads(settings, defaults.spillThreads()));
    StackedTierConfig stackedDefaults = StackedTierConfig.defaults();
    this.stacked = lower.size() < 2 ? stackedDefaults : new StackedTierConfig(
        settings.integer("stacked.upload-queue-blocks", stackedDefaults.uploadQueueBlocks()),
        settings.integer("stacked.upload-threads", stackedDefaults.uploadThreads()),
        settings.duration("stacked.close-wait", stackedDefaults.closeWait()),
        settings.choice("stacked.upload", StackedTierConfig.Upload.class, stackedDefaults.upload()));
    for (String kind : lower) {
      lowerSettings.add(settings.group(kind));
    }
    settings.requireAllRead();
    checkRam();
  }

  /** The kinds a {@code lower} setting lists, top to bottom; empty for {@code none}. */
  private static List<String> kinds(String lower) {
    if (lower.isBlank() || "none".equals(lower.strip())) {
      return List.of();
    }
    List<String> kinds = new ArrayList<>();
    for (String kind : lower.split(",")) {
      String k = kind.strip();
      if (!k.matches("[a-z0-9-]+") || "none".equals(k)) {
        throw new IllegalArgumentException("setting 'lower' is '" + lower
            + "': expected 'none' or tier kinds separated by commas, such as 'disk, s3'");
      }
      kinds.add(k);
    }
    if (new HashSet<>(kinds).size() != kinds.size()) {
      throw new IllegalArgumentException("setting 'lower' names a tier twice: '" + lower + "'");
    }
    return List.copyOf(kinds);
  }

  private static Path sharedMemoryDir(String dir) {
    if (dir.isBlank()) {
      return null;
    }
    Path path = Path.of(dir);
    if (!Files.isDirectory(path)) {
      throw new IllegalArgumentException("setting 'ram.shared-memory-dir' is '" + dir
          + "', which is not a directory (use a tmpfs such as /dev/shm)");
    }
    return path;
  }

  private static int spillThreads(TierSettings settings, int fallback) {
    int threads = settings.integer("tiered.spill-threads", fallback);
    if (threads < 1 || threads > TieredCacheConfig.MAX_SPILL_THREADS) {
      throw new IllegalArgumentException("setting 'tiered.spill-threads' is " + threads
          + ", expected 1 to " + TieredCacheConfig.MAX_SPILL_THREADS);
    }
    return threads;
  }

  /** Fails at once, naming the settings, if RAM's budget and largest block do not fit together. */
  private void checkRam() {
    RamTierConfig ram;
    try {
      ram = RamTierConfig.ofCapacity(ramBytes);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("setting 'ram.bytes': " + e.getMessage(), e);
    }
    if (maxBlockBytes != null) {
      try {
        ram.withMaxBlockBytes(maxBlockBytes);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("setting 'ram.max-block-bytes' (" + maxBlockBytes
            + " bytes) does not fit a RAM tier of 'ram.bytes' (" + ramBytes + " bytes): "
            + e.getMessage() + "; lower 'ram.max-block-bytes' or raise 'ram.bytes'", e);
      }
    }
  }

  /**
   * Reads settings.
   *
   * @throws IllegalArgumentException naming the first setting that is malformed, or every one that
   *     is unknown
   */
  public static KvCacheConfig of(Map<String, String> settings) {
    return new KvCacheConfig(TierSettings.of(settings));
  }

  /**
   * Reads a properties file (UTF-8).
   *
   * @throws IOException if the file cannot be read
   * @throws IllegalArgumentException as {@link #of(Map)}
   */
  public static KvCacheConfig load(Path file) throws IOException {
    Properties p = new Properties();
    try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      p.load(r);
    }
    Map<String, String> map = new TreeMap<>();
    p.stringPropertyNames().forEach(k -> map.put(k, p.getProperty(k)));
    return of(map);
  }

  /** The RAM budget in bytes. */
  public long ramBytes() {
    return ramBytes;
  }

  /** The largest block the cache takes, in bytes. */
  public int maxBlockBytes() {
    RamTierConfig ram = RamTierConfig.ofCapacity(ramBytes);
    return (maxBlockBytes == null ? ram : ram.withMaxBlockBytes(maxBlockBytes)).maxBlockBytes();
  }

  /** Which blocks the RAM tier keeps when full. */
  public RamPolicy ramPolicy() {
    return ramPolicy;
  }

  /** Where RAM is reserved as files other local processes may map; null for private memory. */
  public Path ramSharedMemoryDir() {
    return ramSharedMemoryDir;
  }

  /** The kinds of the tiers below RAM, top to bottom; empty for none. */
  public List<String> lower() {
    return lower;
  }

  /** How stacked lower tiers upload blocks to the ones below them. */
  public StackedTierConfig stacked() {
    return stacked;
  }

  /** How blocks move between RAM and the lower tier. */
  public TieredCacheConfig tiered() {
    return tiered;
  }

  /**
   * Opens the lower tier, if any, and builds the cache.
   *
   * @throws IllegalStateException if no {@link TierFactory} of the lower tier's kind is on the class
   *     path, or the RAM budget cannot be reserved
   * @throws IllegalArgumentException if a setting of the lower tier is missing, malformed or unknown
   * @throws IOException if the lower tier's storage cannot be opened
   */
  public KvCache open() throws IOException {
    int maxBlock = maxBlockBytes();
    KvCacheBuilder builder = KvCache.builder().ramBytes(ramBytes)
        .maxBlockBytes(maxBlock)
        .ramPolicy(ramPolicy)
        .ramSharedMemory(ramSharedMemoryDir)
        .spillQueueBlocks(tiered.spillQueueBlocks())
        .spillQueueWait(tiered.spillQueueWait())
        .promoteOnLowerHit(tiered.promoteOnLowerHit())
        .spillOnClose(tiered.spillOnClose())
        .durability(tiered.durability())
        .spillThreads(tiered.spillThreads());
    if (lower.isEmpty()) {
      return builder.build();
    }
    List<Tier> opened = new ArrayList<>();
    try {
      for (int i = 0; i < lower.size(); i++) {
        opened.add(factory(lower.get(i)).open(lowerSettings.get(i), maxBlock));
      }
      Tier tier = opened.get(opened.size() - 1);
      for (int i = opened.size() - 2; i >= 0; i--) {
        tier = new StackedTier(opened.get(i), tier, stacked);
      }
      return builder.lowerTier(tier).build();
    } catch (IOException | RuntimeException e) {
      for (Tier t : opened) {
        try {
          t.close();
        } catch (RuntimeException closing) {
          e.addSuppressed(closing);
        }
      }
      throw e;
    }
  }

  private static TierFactory factory(String kind) {
    for (TierFactory f : ServiceLoader.load(TierFactory.class)) {
      if (f.kind().equals(kind)) {
        return f;
      }
    }
    throw new IllegalStateException("setting 'lower' names '" + kind + "', but no tier of that kind"
        + " is on the class path (the disk tier comes with kvcache-disk, the object tier with"
        + " kvcache-s3)");
  }

  @Override
  public String toString() {
    return "KvCacheConfig[ram " + ramBytes + " bytes, lower " + lower + ", " + tiered + "]";
  }
}
