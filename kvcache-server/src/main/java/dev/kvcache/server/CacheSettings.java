package dev.kvcache.server;

import dev.kvcache.KvCacheConfig;
import io.micronaut.context.annotation.ConfigurationProperties;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

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
class CacheSettings {

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
  private Map<String, String> s3 = new LinkedHashMap<>();

  /** The {@code s3.} settings that configure the upload from the disk tier, not the object tier. */
  private static final List<String> UPLOAD_SETTINGS =
      List.of("upload", "upload-queue-blocks", "upload-threads", "close-wait");

  /**
   * One setting: its name here, its name in {@link KvCacheConfig}, its value, and whether it
   * belongs to the disk tier (left out when there is none).
   */
  private record Setting(String name, String configName, Function<CacheSettings, String> value,
      boolean disk) {}

  private static final List<Setting> SETTINGS = List.of(
      new Setting("kvcache.cache.ram-bytes", "ram.bytes", s -> s.ramBytes, false),
      new Setting("kvcache.cache.max-block-bytes", "ram.max-block-bytes", s -> s.maxBlockBytes, false),
      new Setting("kvcache.cache.ram-policy", "ram.policy", s -> s.ramPolicy, false),
      new Setting("kvcache.cache.ram-shared-memory-dir", "ram.shared-memory-dir",
          s -> s.ramSharedMemoryDir, false),
      new Setting("kvcache.cache.disk-dir", "disk.dir", s -> s.diskDir, true),
      new Setting("kvcache.cache.disk-capacity", "disk.capacity", s -> s.diskCapacity, true),
      new Setting("kvcache.cache.disk-sync-policy", "disk.sync-policy", s -> s.diskSyncPolicy, true),
      new Setting("kvcache.cache.disk-codec", "disk.codec", s -> s.diskCodec, true),
      new Setting("kvcache.cache.disk-codec-filter", "disk.codec-filter", s -> s.diskCodecFilter, true),
      new Setting("kvcache.cache.disk-min-free", "disk.min-free", s -> s.diskMinFree, true),
      new Setting("kvcache.cache.disk-scrub-rate", "disk.scrub-rate", s -> s.diskScrubRate, true),
      new Setting("kvcache.cache.disk-direct-writes", "disk.direct-writes",
          s -> s.diskDirectWrites, true),
      new Setting("kvcache.cache.disk-direct-reads", "disk.direct-reads",
          s -> s.diskDirectReads, true),
      new Setting("kvcache.cache.durability", "tiered.durability", s -> s.durability, true),
      new Setting("kvcache.cache.spill-threads", "tiered.spill-threads", s -> s.spillThreads, true),
      new Setting("kvcache.cache.spill-queue-blocks", "tiered.spill-queue-blocks",
          s -> s.spillQueueBlocks, true));

  /**
   * The settings in the form {@link KvCacheConfig} reads.
   *
   * @throws IllegalArgumentException naming the server's setting that is malformed
   */
  KvCacheConfig toConfig() {
    boolean disk = diskDir != null && !diskDir.isBlank();
    String bucket = s3.get("bucket");
    boolean objects = bucket != null && !bucket.isBlank();
    Map<String, String> settings = new LinkedHashMap<>();
    if (disk || objects) {
      settings.put("lower", disk && objects ? "disk, s3" : disk ? "disk" : "s3");
    }
    if (objects) {
      s3.forEach((key, value) -> {
        if (value != null && !value.isBlank()) {
          settings.put((disk && UPLOAD_SETTINGS.contains(key) ? "stacked." : "s3.") + key, value);
        }
      });
    }
    for (Setting setting : SETTINGS) {
      String value = setting.value().apply(this);
      if ((disk || !setting.disk()) && value != null && !value.isBlank()) {
        settings.put(setting.configName(), value);
      }
    }
    try {
      return KvCacheConfig.of(settings);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(inServerTerms(e.getMessage()), e);
    }
  }

  /** A message of {@link KvCacheConfig}'s with its settings named as the server's. */
  static String inServerTerms(String message) {
    for (Setting setting : SETTINGS) {
      message = message.replace("'" + setting.configName() + "'", "'" + setting.name() + "'");
    }
    for (String group : List.of("s3.", "stacked.")) {
      message = message.replace("'" + group, "'kvcache.cache.s3.")
          .replace("setting " + group, "setting kvcache.cache.s3.");
    }
    return message;
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
