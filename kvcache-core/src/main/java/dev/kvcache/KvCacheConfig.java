package dev.kvcache;

import dev.kvcache.ram.RamPolicy;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierFactory;
import dev.kvcache.spi.TierSettings;
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
import java.util.Objects;
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
 * <p>Every setting, its default and its form, with the name the server gives it, is in the table
 * of {@code docs/settings.md}, which a test holds against the readers. The RAM tier's are {@code
 * ram.*}, the tiered cache's {@code tiered.*} ({@link TieredCacheConfig#read}), the uploads' of
 * stacked tiers {@code stacked.*} ({@link StackedTierConfig#read}); a lower tier's own are read by
 * its factory under its kind ({@code disk.*}, {@code s3.*}, {@code remote.*}).
 *
 * <p>Sizes take a unit (B, KiB, MiB, GiB, TiB), durations one of ms, s, m, h. A setting that is
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
  private final List<TierSettings> lowerSettings;

  private KvCacheConfig(Builder b) {
    this.ramBytes = b.ramBytes;
    this.maxBlockBytes = b.maxBlockBytes;
    this.ramPolicy = b.ramPolicy;
    this.ramSharedMemoryDir = b.ramSharedMemoryDir;
    this.lower = List.copyOf(b.lower);
    this.tiered = b.tiered;
    this.stacked = b.stacked;
    this.lowerSettings = List.copyOf(b.lowerSettings);
  }

  /**
   * A configuration built from typed values, as a server builds one from its own settings; {@link
   * #of(Map)} reads string settings into one.
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Reads settings.
   *
   * @throws IllegalArgumentException naming the first setting that is malformed, or the unknown
   *     ones ({@code tiered.*} and {@code stacked.*} each reported before the rest)
   */
  public static KvCacheConfig of(Map<String, String> settings) {
    TierSettings s = TierSettings.of(settings);
    Builder b = builder();
    long ram = s.bytes("ram.bytes", KvCacheBuilder.DEFAULT_RAM_BYTES);
    s.checked(() -> b.ramBytes(ram), "ram.bytes");
    if (s.has("ram.max-block-bytes")) {
      b.maxBlockBytes(s.intBytes("ram.max-block-bytes", 0));
    }
    b.ramPolicy(s.choice("ram.policy", RamPolicy.class, RamTierConfig.DEFAULT_POLICY));
    String dir = s.string("ram.shared-memory-dir", "");
    if (!dir.isBlank()) {
      s.checked(() -> b.ramSharedMemoryDir(Path.of(dir)), "ram.shared-memory-dir");
    }
    TierSettings tiered = s.group("tiered");
    b.tiered(TieredCacheConfig.read(tiered));
    tiered.requireAllRead();
    List<String> kinds = kinds(s.string("lower", "none"));
    if (kinds.size() > 1) {
      TierSettings stacked = s.group("stacked");
      b.stacked(StackedTierConfig.read(stacked));
      stacked.requireAllRead();
    }
    for (String kind : kinds) {
      b.lower(kind, s.group(kind));
    }
    s.requireAllRead();
    return s.checked(b::build, "ram.max-block-bytes", "ram.bytes");
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
    return kinds;
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
    // what a failure must close: the tiers opened, and once stacked, the stack in their place
    // (closing a stacked tier closes the tiers under it and stops its upload threads)
    List<Tier> opened = new ArrayList<>();
    try {
      for (int i = 0; i < lower.size(); i++) {
        opened.add(factory(lower.get(i)).open(lowerSettings.get(i), maxBlock));
      }
      for (int i = opened.size() - 2; i >= 0; i--) {
        Tier stackedTier = new StackedTier(opened.get(i), opened.get(i + 1), stacked);
        opened.remove(i + 1);
        opened.set(i, stackedTier);
      }
      return builder.lowerTier(opened.get(0)).build();
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

  /**
   * Builds a {@link KvCacheConfig} from typed values. {@link #ramBytes}, {@link
   * #ramSharedMemoryDir} and {@link #lower} check their value at once, {@link #build()} the largest
   * block against the RAM budget, and {@link KvCacheConfig#open()} the lower tiers' settings, as
   * their factories read them. {@link #tiered} applies once there is a lower tier, {@link
   * #stacked} once there are two. The errors speak of values; a reader of named settings puts the
   * names in front ({@link TierSettings#checked}).
   */
  public static final class Builder {

    private long ramBytes = KvCacheBuilder.DEFAULT_RAM_BYTES;
    private Integer maxBlockBytes;
    private RamPolicy ramPolicy = RamTierConfig.DEFAULT_POLICY;
    private Path ramSharedMemoryDir;
    private TieredCacheConfig tiered = TieredCacheConfig.defaults();
    private StackedTierConfig stacked = StackedTierConfig.defaults();
    private final List<String> lower = new ArrayList<>();
    private final List<TierSettings> lowerSettings = new ArrayList<>();

    private Builder() {}

    /**
     * The RAM budget (default 256 MiB).
     *
     * @throws IllegalArgumentException if a RAM tier cannot have that capacity
     */
    public Builder ramBytes(long bytes) {
      RamTierConfig.ofCapacity(bytes);
      this.ramBytes = bytes;
      return this;
    }

    /**
     * The largest block (default 64 MiB, or the RAM budget if smaller); {@link #build()} checks
     * that RAM can hold it.
     */
    public Builder maxBlockBytes(int bytes) {
      this.maxBlockBytes = bytes;
      return this;
    }

    /** Which blocks RAM keeps when full. */
    public Builder ramPolicy(RamPolicy policy) {
      this.ramPolicy = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /**
     * A tmpfs directory where RAM is reserved as files other local processes may map; null (the
     * default) for private memory.
     *
     * @throws IllegalArgumentException if {@code dir} is not a directory
     */
    public Builder ramSharedMemoryDir(Path dir) {
      if (dir != null && !Files.isDirectory(dir)) {
        throw new IllegalArgumentException("'" + dir + "' is not a directory (use a tmpfs such as"
            + " /dev/shm)");
      }
      this.ramSharedMemoryDir = dir;
      return this;
    }

    /** How blocks move between RAM and the tiers below it. */
    public Builder tiered(TieredCacheConfig tiered) {
      this.tiered = Objects.requireNonNull(tiered, "tiered");
      return this;
    }

    /** How each of several lower tiers uploads to the ones below it. */
    public Builder stacked(StackedTierConfig stacked) {
      this.stacked = Objects.requireNonNull(stacked, "stacked");
      return this;
    }

    /**
     * Adds a tier below those added before, opened by the {@link TierFactory} of {@code kind} from
     * {@code settings}, whose errors name the settings as {@code settings} names them.
     *
     * @throws IllegalArgumentException if {@code kind} is not a tier kind's name ({@code a-z 0-9
     *     -}), or a tier of that kind is already added
     */
    public Builder lower(String kind, TierSettings settings) {
      Objects.requireNonNull(kind, "kind");
      if (!kind.matches("[a-z0-9-]+") || "none".equals(kind)) {
        throw new IllegalArgumentException("'" + kind + "' is not a tier kind, such as disk or s3");
      }
      if (lower.contains(kind)) {
        throw new IllegalArgumentException("a '" + kind + "' tier is already below RAM");
      }
      lower.add(kind);
      lowerSettings.add(Objects.requireNonNull(settings, "settings"));
      return this;
    }

    /**
     * The configuration.
     *
     * @throws IllegalArgumentException if the largest block does not fit the RAM budget
     */
    public KvCacheConfig build() {
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
  }

  @Override
  public String toString() {
    return "KvCacheConfig[ram " + ramBytes + " bytes, lower " + lower + ", " + tiered + "]";
  }
}
