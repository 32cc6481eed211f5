package dev.kvcache.server.cache;

import dev.kvcache.Namespace;
import dev.kvcache.ram.RamPolicy;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.spi.TierSettings;
import dev.kvcache.tiered.KvCacheBuilder;
import dev.kvcache.tiered.KvCacheConfig;
import dev.kvcache.tiered.StackedTierConfig;
import dev.kvcache.tiered.TieredCacheConfig;
import io.micronaut.context.annotation.ConfigurationProperties;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The cache behind the server, from {@code kvcache.cache.*} (or {@code KVCACHE_CACHE_*} in the
 * environment). Sizes take a unit (B, KiB, MiB, GiB, TiB). The defaults fit a laptop: 1 GiB of RAM
 * over an 8 GiB disk tier in {@code ./kvcache-data}, every PUT written behind to disk ({@code
 * durability}); an empty {@code disk-dir} means RAM only. An empty {@code disk-min-free} leaves the
 * disk tier's default floor (the smaller of 1 GiB and 5% of the file system), an empty {@code
 * disk-scrub-rate} its default scrub rate (16 MiB per second; 0 turns the scrub off).
 *
 * <p>{@code kvcache.cache.s3.*} adds an object-storage tier below the disk (or below RAM, with no
 * disk) once {@code s3.bucket} is set: every {@code s3.} setting of {@link
 * dev.kvcache.s3.S3TierFactory} is passed on, and {@code s3.upload}, {@code
 * s3.upload-queue-blocks}, {@code s3.upload-threads} and {@code s3.close-wait} set which blocks the
 * disk tier uploads to it, and how ({@link
 * dev.kvcache.tiered.StackedTierConfig}).
 */
@ConfigurationProperties("kvcache.cache")
public class CacheSettings {

  private String ramBytes = "1GiB";
  private String maxBlockBytes = "64MiB";
  private String ramPolicy = "lru";
  private String ramSharedMemoryDir = "";
  private String diskDir = "kvcache-data";
  private String diskCapacity = "8GiB";
  private String diskSyncPolicy = "periodic";
  private String diskCodec = "none";
  private String diskCodecFilter = "none";
  private String diskMinFree = "";
  private String diskScrubRate = "";
  private String diskDirectWrites = "true";
  private String diskDirectReads = "true";
  private String durability = "write_behind";
  private String spillThreads = "2";
  private String spillQueueBlocks = "64";
  private String spillOnClose = "true";
  private Map<String, String> s3 = new LinkedHashMap<>();

  private static final String PREFIX = "kvcache.cache.";

  /**
   * The cache's configuration, built from these settings; an error names the server's setting
   * that is malformed, out of range or unknown.
   *
   * @throws IllegalArgumentException naming the setting
   */
  public KvCacheConfig toConfig() {
    return toConfig(NamespaceQuotas.NONE, SealedNamespaces.NONE);
  }

  /**
   * As {@link #toConfig()}, with these namespaces' quotas ({@code kvcache.quotas.*}) and these
   * namespaces sealed at rest ({@code kvcache.sealing.*}).
   *
   * @throws IllegalArgumentException naming the setting
   */
  public KvCacheConfig toConfig(NamespaceQuotas quotas, SealedNamespaces sealed) {
    Map<Namespace, Long> ramQuotas = quotas.ram();
    Map<String, String> own = new LinkedHashMap<>();
    own.put("ram-bytes", ramBytes);
    own.put("max-block-bytes", maxBlockBytes);
    own.put("ram-policy", ramPolicy);
    own.put("ram-shared-memory-dir", ramSharedMemoryDir);
    own.put("durability", durability);
    own.put("spill-threads", spillThreads);
    own.put("spill-queue-blocks", spillQueueBlocks);
    own.put("spill-on-close", spillOnClose);
    TierSettings s = TierSettings.of(present(own), PREFIX);
    KvCacheBuilder b = KvCacheBuilder.newBuilder();
    long ram = s.bytes("ram-bytes", KvCacheBuilder.DEFAULT_RAM_BYTES);
    s.checked(() -> b.ramBytes(ram), "ram-bytes");
    if (s.has("max-block-bytes")) {
      b.maxBlockBytes(s.intBytes("max-block-bytes", 0));
    }
    b.ramPolicy(s.choice("ram-policy", RamPolicy.class, RamTierConfig.DEFAULT_POLICY));
    String shared = s.string("ram-shared-memory-dir", "");
    if (!shared.isEmpty()) {
      s.checked(() -> b.ramSharedMemory(Path.of(shared)), "ram-shared-memory-dir");
    }
    // checked on every server; what a PUT promises of the disk, so applied over a disk only
    TieredCacheConfig tiered = TieredCacheConfig.read(s);
    boolean disk = diskDir != null && !diskDir.isBlank();
    if (disk) {
      b.tiered(tiered);
      b.lower("disk", TierSettings.of(present(diskSettings()), PREFIX + "disk-"));
    }
    TierSettings objects = TierSettings.of(present(s3), PREFIX + "s3.");
    if (objects.has("bucket")) {
      if (disk) {
        b.stacked(StackedTierConfig.read(objects));
      }
      b.lower("s3", objects);
    }
    if (!ramQuotas.isEmpty()) {
      try {
        RamTierConfig.ofCapacity(ram).withQuotas(ramQuotas);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("settings 'kvcache.quotas.*.ram-bytes' and '" + PREFIX
            + "ram-bytes': " + e.getMessage(), e);
      }
      ramQuotas.forEach(b::ramQuota);
    }
    if (!quotas.disk().isEmpty() && !disk) {
      throw new IllegalArgumentException("settings 'kvcache.quotas.*.disk-bytes' need a disk tier"
          + " ('" + PREFIX + "disk-dir')");
    }
    quotas.disk().forEach((ns, bytes) -> b.quota("disk", ns, bytes));
    if (!quotas.objects().isEmpty() && !objects.has("bucket")) {
      throw new IllegalArgumentException("settings 'kvcache.quotas.*.object-bytes' need an object"
          + " tier ('" + PREFIX + "s3.bucket')");
    }
    quotas.objects().forEach((ns, bytes) -> b.quota("s3", ns, bytes));
    if (!sealed.namespaces().isEmpty()) {
      if (!disk && !objects.has("bucket")) {
        throw new IllegalArgumentException("settings 'kvcache.sealing.namespaces' need a tier"
            + " below RAM ('" + PREFIX + "disk-dir' or '" + PREFIX + "s3.bucket'): RAM keeps"
            + " blocks as they are");
      }
      b.sealing(sealed.masterKeys(), sealed.namespaces());
    }
    s.requireAllRead();
    return s.checked(b::config, "max-block-bytes", "ram-bytes");
  }

  /** The disk tier's settings, by their names after {@code disk-}. */
  private Map<String, String> diskSettings() {
    Map<String, String> disk = new LinkedHashMap<>();
    disk.put("dir", diskDir);
    disk.put("capacity", diskCapacity);
    disk.put("sync-policy", diskSyncPolicy);
    disk.put("codec", diskCodec);
    disk.put("codec-filter", diskCodecFilter);
    disk.put("min-free", diskMinFree);
    disk.put("scrub-rate", diskScrubRate);
    disk.put("direct-writes", diskDirectWrites);
    disk.put("direct-reads", diskDirectReads);
    return disk;
  }

  /** The settings that have a value: an empty one stands for the default. */
  private static Map<String, String> present(Map<String, String> settings) {
    Map<String, String> present = new LinkedHashMap<>();
    settings.forEach((key, value) -> {
      if (value != null && !value.isBlank()) {
        present.put(key, value);
      }
    });
    return present;
  }

  public String getRamBytes() {
    return ramBytes;
  }

  public void setRamBytes(String ramBytes) {
    this.ramBytes = ramBytes;
  }

  public String getMaxBlockBytes() {
    return maxBlockBytes;
  }

  public void setMaxBlockBytes(String maxBlockBytes) {
    this.maxBlockBytes = maxBlockBytes;
  }

  public String getRamPolicy() {
    return ramPolicy;
  }

  public void setRamPolicy(String ramPolicy) {
    this.ramPolicy = ramPolicy;
  }

  public String getDiskDir() {
    return diskDir;
  }

  public void setDiskDir(String diskDir) {
    this.diskDir = diskDir;
  }

  public String getDiskCapacity() {
    return diskCapacity;
  }

  public void setDiskCapacity(String diskCapacity) {
    this.diskCapacity = diskCapacity;
  }

  public String getDiskSyncPolicy() {
    return diskSyncPolicy;
  }

  public void setDiskSyncPolicy(String diskSyncPolicy) {
    this.diskSyncPolicy = diskSyncPolicy;
  }

  public String getDiskCodec() {
    return diskCodec;
  }

  public void setDiskCodec(String diskCodec) {
    this.diskCodec = diskCodec;
  }

  public String getDiskMinFree() {
    return diskMinFree;
  }

  public void setDiskMinFree(String diskMinFree) {
    this.diskMinFree = diskMinFree;
  }

  public String getDiskDirectWrites() {
    return diskDirectWrites;
  }

  public void setDiskDirectWrites(String diskDirectWrites) {
    this.diskDirectWrites = diskDirectWrites;
  }

  public String getDiskDirectReads() {
    return diskDirectReads;
  }

  public void setDiskDirectReads(String diskDirectReads) {
    this.diskDirectReads = diskDirectReads;
  }

  public String getDiskScrubRate() {
    return diskScrubRate;
  }

  public void setDiskScrubRate(String diskScrubRate) {
    this.diskScrubRate = diskScrubRate;
  }

  public String getDurability() {
    return durability;
  }

  public void setDurability(String durability) {
    this.durability = durability;
  }

  public String getRamSharedMemoryDir() {
    return ramSharedMemoryDir;
  }

  public void setRamSharedMemoryDir(String ramSharedMemoryDir) {
    this.ramSharedMemoryDir = ramSharedMemoryDir;
  }

  public String getSpillThreads() {
    return spillThreads;
  }

  public void setSpillThreads(String spillThreads) {
    this.spillThreads = spillThreads;
  }

  public String getSpillOnClose() {
    return spillOnClose;
  }

  public void setSpillOnClose(String spillOnClose) {
    this.spillOnClose = spillOnClose;
  }

  public String getSpillQueueBlocks() {
    return spillQueueBlocks;
  }

  public void setSpillQueueBlocks(String spillQueueBlocks) {
    this.spillQueueBlocks = spillQueueBlocks;
  }

  public Map<String, String> getS3() {
    return s3;
  }

  public void setS3(Map<String, String> s3) {
    this.s3 = s3 == null ? new LinkedHashMap<>() : new LinkedHashMap<>(s3);
  }

  public String getDiskCodecFilter() {
    return diskCodecFilter;
  }

  public void setDiskCodecFilter(String diskCodecFilter) {
    this.diskCodecFilter = diskCodecFilter;
  }
}
