package dev.kvcache.disk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.PutStatus;
import dev.kvcache.disk.tool.DiskToolTest;
import dev.kvcache.testkit.Payloads;
import dev.kvcache.tiered.KvCacheConfig;
import dev.kvcache.tiered.TieredCache;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DiskTierFactoryTest {

  @TempDir Path dir;

  @Test
  void settingsOpenRamOverDisk() throws IOException {
    KvCacheConfig config = KvCacheConfig.of(Map.of(
        "ram.bytes", "4MiB", "ram.max-block-bytes", "256KiB", "lower", "disk",
        "disk.dir", dir.toString(), "disk.capacity", "64MiB", "disk.super-block", "8MiB",
        "disk.sync-policy", "always", "disk.min-free", "0"));
    try (KvCache cache = config.open()) {
      assertThat(cache).isInstanceOf(TieredCache.class);
      TieredCache tiered = (TieredCache) cache;
      assertThat(tiered.lowerStats().capacityBytes()).isEqualTo(64L << 20);
      assertThat(tiered.capacityBytes()).isEqualTo((4L << 20) + (64L << 20));
      BlockKey key = Payloads.key(1);
      assertThat(cache.put(key, Payloads.of(key, 1, 100_000))).isEqualTo(PutStatus.STORED);
    }
    assertThat(dir.resolve("lock")).as("the disk tier's lock file").exists();
  }

  @Test
  void theCodecSettingCompressesWhatGoesToDisk() throws IOException {
    long[] used = new long[2];
    String[][] codecs = {{"disk.codec", "none"}, {"disk.codec", "lz4", "disk.codec-filter", "byte_shuffle_2"}};
    BlockKey key = Payloads.key(1);
    ByteBuffer zeros = ByteBuffer.allocateDirect(256 << 10);
    for (int i = 0; i < 2; i++) {
      Map<String, String> settings = with(Map.of("ram.bytes", "4MiB", "ram.max-block-bytes",
          "256KiB", "lower", "disk", "disk.dir", dir.resolve("d" + i).toString(),
          "disk.capacity", "64MiB", "disk.super-block", "8MiB"), codecs[i]);
      try (KvCache cache = KvCacheConfig.of(settings).open()) {
        assertThat(cache.put(key, zeros)).isEqualTo(PutStatus.STORED);
      } // RAM is written to disk on close
      String stats = DiskToolTest.tool("stats", dir.resolve("d" + i).toString()).out();
      Matcher live = Pattern.compile("live records +(\\d+) bytes").matcher(stats);
      assertThat(live.find()).as(stats).isTrue();
      used[i] = Long.parseLong(live.group(1));
      try (KvCache cache = KvCacheConfig.of(settings).open()) {
        ByteBuffer back = ByteBuffer.allocateDirect(256 << 10);
        assertThat(cache.getInto(key, back)).isEqualTo(GetStatus.HIT);
        assertThat(back.flip()).isEqualTo(zeros);
      }
    }
    assertThat(used[0]).as("bytes on disk, stored as is").isGreaterThanOrEqualTo(256 << 10);
    assertThat(used[1]).as("bytes on disk, stored with lz4").isLessThan(32 << 10);
  }

  @Test
  void badDiskSettingsAreNamed() {
    Map<String, String> base = Map.of("ram.bytes", "4MiB", "lower", "disk", "disk.dir", dir.toString());
    assertThatThrownBy(() -> KvCacheConfig.of(base).open())
        .hasMessage("setting 'disk.capacity' is required");
    assertThatThrownBy(() -> KvCacheConfig.of(with(base, "disk.capacity", "64MiB", "disk.sync-policy", "often")).open())
        .hasMessage("setting 'disk.sync-policy' is 'often', expected one of none, periodic, always");
    assertThatThrownBy(() -> KvCacheConfig.of(with(base, "disk.capacity", "64MiB", "disk.capcity", "1GiB")).open())
        .hasMessage("unknown setting disk.capcity");
    assertThatThrownBy(() -> KvCacheConfig.of(with(base, "disk.capacity", "64MiB", "disk.codec", "zstd")).open())
        .hasMessage("setting 'disk.codec' is 'zstd', expected one of none, lz4");
    assertThatThrownBy(() -> KvCacheConfig.of(with(base, "disk.capacity", "64MiB", "disk.codec-filter", "byte_shuffle_2")).open())
        .hasMessage("setting 'disk.codec-filter' needs 'disk.codec' = lz4");
  }

  @Test
  void aSmallDiskTakesTheLargestBlockOrSaysWhichSettingToChange() throws IOException {
    // 64 MiB blocks: an eighth of 300 MiB would not hold one, a super-block sized for it does
    Map<String, String> base = Map.of("ram.bytes", "64MiB", "lower", "disk",
        "disk.dir", dir.toString(), "disk.min-free", "0B", "disk.sync-policy", "none");
    try (KvCache cache = KvCacheConfig.of(with(base, "disk.capacity", "300MiB")).open()) {
      assertThat(((TieredCache) cache).lower().maxBlockBytes()).isEqualTo(64 << 20);
    }
    assertThatThrownBy(() -> KvCacheConfig.of(with(base, "disk.capacity", "200MiB")).open())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("setting 'disk.capacity' must be at least 4 super-blocks")
        .hasMessageContaining("a super-block must hold the largest block (67108864)")
        .hasMessageContaining("raise setting 'disk.capacity' to at least 268468224");
  }

  private static Map<String, String> with(Map<String, String> base, String... kv) {
    Map<String, String> m = new TreeMap<>(base);
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return m;
  }
}
