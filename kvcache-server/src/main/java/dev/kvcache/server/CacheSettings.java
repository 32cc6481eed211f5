package dev.kvcache.server;

import dev.kvcache.KvCacheConfig;
import io.micronaut.context.annotation.ConfigurationProperties;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The cache behind the server, from {@code kvcache.cache.*} (or {@code KVCACHE_CACHE_*} in the
 * environment). Sizes take a unit (B, KiB, MiB, GiB, TiB). The defaults fit a laptop: 1 GiB of RAM
 * over an 8 GiB disk tier in {@code ./kvcache-data}; an empty {@code disk-dir} means RAM only.
 */
@ConfigurationProperties("kvcache.cache")
class CacheSettings {

  private String ramBytes = "1GiB";
  private String maxBlockBytes = "64MiB";
  private String diskDir = "kvcache-data";
  private String diskCapacity = "8GiB";
  private String diskSyncPolicy = "periodic";
  private String diskCodec = "none";
  private String diskCodecFilter = "none";

  /** Each setting's name here and in {@link KvCacheConfig}. */
  private static final Map<String, String> NAMES = Map.of(
      "kvcache.cache.ram-bytes", "ram.bytes",
      "kvcache.cache.max-block-bytes", "ram.max-block-bytes",
      "kvcache.cache.disk-dir", "disk.dir",
      "kvcache.cache.disk-capacity", "disk.capacity",
      "kvcache.cache.disk-sync-policy", "disk.sync-policy",
      "kvcache.cache.disk-codec", "disk.codec",
      "kvcache.cache.disk-codec-filter", "disk.codec-filter");

  /**
   * The settings in the form {@link KvCacheConfig} reads.
   *
   * @throws IllegalArgumentException naming the server's setting that is malformed
   */
  KvCacheConfig toConfig() {
    Map<String, String> settings = new LinkedHashMap<>();
    settings.put("ram.bytes", ramBytes);
    settings.put("ram.max-block-bytes", maxBlockBytes);
    if (diskDir != null && !diskDir.isBlank()) {
      settings.put("lower", "disk");
      settings.put("disk.dir", diskDir);
      settings.put("disk.capacity", diskCapacity);
      settings.put("disk.sync-policy", diskSyncPolicy);
      settings.put("disk.codec", diskCodec);
      settings.put("disk.codec-filter", diskCodecFilter);
    }
    try {
      return KvCacheConfig.of(settings);
    } catch (IllegalArgumentException e) {
      String message = e.getMessage();
      for (Map.Entry<String, String> name : NAMES.entrySet()) {
        message = message.replace("'" + name.getValue() + "'", "'" + name.getKey() + "'");
      }
      throw new IllegalArgumentException(message, e);
    }
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

  public String getDiskCodecFilter() {
    return diskCodecFilter;
  }

  public void setDiskCodecFilter(String diskCodecFilter) {
    this.diskCodecFilter = diskCodecFilter;
  }
}
