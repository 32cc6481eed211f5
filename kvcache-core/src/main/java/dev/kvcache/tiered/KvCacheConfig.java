package dev.kvcache.tiered;

import dev.kvcache.Namespace;
import dev.kvcache.ram.RamPolicy;
import dev.kvcache.ram.RamTier;
import dev.kvcache.seal.MasterKeys;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierFactory;
import dev.kvcache.spi.TierPolicies;
import dev.kvcache.spi.TierSettings;
import dev.kvcache.tiered.KvCacheBuilder.LowerTier;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A cache described, not yet opened: what a {@link KvCacheBuilder} was given, or what string
 * settings say, as a properties file holds them ({@link #of}, {@link #load}), read into a builder.
 * RAM only, or RAM over a lower tier opened by the {@link TierFactory} of its kind (the disk
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
  private final TieredCacheConfig tiered;
  private final StackedTierConfig stacked;
  private final List<LowerTier> lower;
  private final Map<Namespace, Long> ramQuotas;
  private final Map<String, Map<Namespace, Long>> lowerQuotas;
  private final MasterKeys masterKeys;
  private final Set<Namespace> sealed;
  /** Set once a tier given opened has been handed to a cache. */
  private final AtomicBoolean tiersTaken = new AtomicBoolean();

  KvCacheConfig(KvCacheBuilder b) {
    this.ramBytes = b.ramBytes;
    this.maxBlockBytes = b.maxBlockBytes;
    this.ramPolicy = b.ramPolicy;
    this.ramSharedMemoryDir = b.ramSharedMemoryDir;
    this.ramQuotas = Map.copyOf(b.ramQuotas);
    Map<String, Map<Namespace, Long>> quotas = new HashMap<>();
    b.lowerQuotas.forEach((kind, q) -> quotas.put(kind, Map.copyOf(q)));
    this.lowerQuotas = Map.copyOf(quotas);
    this.masterKeys = b.masterKeys;
    this.sealed = Set.copyOf(b.sealed);
    this.tiered = b.tiered;
    this.stacked = b.stacked;
    this.lower = List.copyOf(b.lower);
  }

  /**
   * Reads settings.
   *
   * @throws IllegalArgumentException naming the first setting that is malformed, or the unknown
   *     ones ({@code tiered.*} and {@code stacked.*} each reported before the rest)
   */
  public static KvCacheConfig of(Map<String, String> settings) {
    TierSettings s = TierSettings.of(settings);
    KvCacheBuilder b = KvCacheBuilder.newBuilder();
    long ram = s.bytes("ram.bytes", KvCacheBuilder.DEFAULT_RAM_BYTES);
    s.checked(() -> b.ramBytes(ram), "ram.bytes");
    if (s.has("ram.max-block-bytes")) {
      int max = s.intBytes("ram.max-block-bytes", 0);
      s.checked(() -> b.maxBlockBytes(max), "ram.max-block-bytes");
    }
    b.ramPolicy(s.choice("ram.policy", RamPolicy.class, RamTierConfig.DEFAULT_POLICY));
    String dir = s.string("ram.shared-memory-dir", "");
    if (!dir.isBlank()) {
      s.checked(() -> b.ramSharedMemory(Path.of(dir)), "ram.shared-memory-dir");
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
    return s.checked(b::config, "ram.max-block-bytes", "ram.bytes");
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

  /**
   * The bytes each namespace with a quota may take at most in the lower tier of {@code kind}
   * ({@link KvCacheBuilder#quota}); empty if it has none.
   */
  public Map<Namespace, Long> quotas(String kind) {
    return lowerQuotas.getOrDefault(kind, Map.of());
  }

  /** The namespaces sealed at rest in the lower tiers ({@link KvCacheBuilder#sealing}). */
  public Set<Namespace> sealed() {
    return sealed;
  }

  /** The RAM each namespace with a quota may fill at most ({@link RamTierConfig#quotas()}). */
  public Map<Namespace, Long> ramQuotas() {
    return ramQuotas;
  }

  /** The kinds of the tiers below RAM, top to bottom; empty for none. */
  public List<String> lower() {
    return lower.stream().map(LowerTier::kind).toList();
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
   * Opens the lower tiers, if any, and builds the cache: the RAM tier alone, or a {@link
   * TieredCache} over the lower tier, the lower tiers stacked in {@link StackedTier}s.
   *
   * @throws IllegalStateException if no {@link TierFactory} of a lower tier's kind is on the class
   *     path, the RAM budget cannot be reserved, or a tier given opened was handed to a cache
   *     already
   * @throws IllegalArgumentException if a setting of a lower tier is missing, malformed or unknown
   * @throws IOException if a lower tier's storage cannot be opened
   */
  public Tier open() throws IOException {
    RamTierConfig ram = RamTierConfig.ofCapacity(ramBytes).withMaxBlockBytes(maxBlockBytes())
        .withPolicy(ramPolicy).withSharedMemory(ramSharedMemoryDir).withQuotas(ramQuotas);
    if (lower.isEmpty()) {
      return new RamTier(ram);
    }
    if (lower.stream().anyMatch(t -> t.tier() != null) && !tiersTaken.compareAndSet(false, true)) {
      throw new IllegalStateException("this configuration's lower tiers were given opened, and"
          + " are owned by the cache opened from it before");
    }
    // what a failure must close: the tiers opened, and once stacked, the stack in their place
    // (closing a stacked tier closes the tiers under it and stops its upload threads)
    List<Tier> opened = new ArrayList<>();
    try {
      for (LowerTier t : lower) {
        opened.add(t.tier() != null ? t.tier() : factory(t.kind()).open(t.settings(),
            ram.maxBlockBytes(), new TierPolicies(quotas(t.kind()), masterKeys, sealed)));
      }
      for (int i = opened.size() - 2; i >= 0; i--) {
        Tier stackedTier = new StackedTier(opened.get(i), opened.get(i + 1), stacked);
        opened.remove(i + 1);
        opened.set(i, stackedTier);
      }
      return new TieredCache(ram, opened.get(0), tiered);
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
    return "KvCacheConfig[ram " + ramBytes + " bytes, lower " + lower() + ", " + tiered + "]";
  }
}
