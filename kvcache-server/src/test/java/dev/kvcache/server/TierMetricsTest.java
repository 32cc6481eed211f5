package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.KvCache;
import dev.kvcache.tiered.TieredCache;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The per-tier metrics: hits each tier served, each tier's bytes and capacity, and the disk tier's
 * scrub and reads past the page cache.
 */
class TierMetricsTest {

  private static final int BLOCK = 1 << 20;

  @TempDir Path dir;

  private static double metric(TestServer server, String name, String tier) throws Exception {
    Double value = server.metric(name, "tier", tier);
    assertThat(value).as("%s{tier=%s} in:%n%s", name, tier, server.metrics()).isNotNull();
    return value;
  }

  private static boolean hasTier(TestServer server, String tier) throws Exception {
    return server.metrics().contains("tier=\"" + tier + "\"");
  }

  @Test
  void readsCountInTheTierThatServedThemAndEachTierShowsItsBytes() throws Exception {
    try (TestServer server = TestServer.start(dir, Map.of("kvcache.cache.ram-bytes", "8MiB",
        "kvcache.cache.max-block-bytes", "1MiB", "kvcache.cache.durability", "write_through",
        "kvcache.cache.disk-scrub-rate", "0"))) {
      Random random = new Random(5);
      byte[][] blocks = new byte[16][BLOCK];
      for (int i = 0; i < blocks.length; i++) {
        random.nextBytes(blocks[i]);
        assertThat(server.put("default", BlockApiTest.key(i), blocks[i]).statusCode())
            .isEqualTo(201);
      }
      // RAM holds at most 7 of the 16 blocks, all of which are on disk (written through): of 16
      // reads, at most 7 find their block in RAM, the others on disk
      for (int i = 0; i < blocks.length; i++) {
        assertThat(server.get("default", BlockApiTest.key(i)).body()).isEqualTo(blocks[i]);
      }
      double ram = metric(server, "kvcache_tier_hits_total", "ram");
      double disk = metric(server, "kvcache_tier_hits_total", "disk");
      assertThat(ram + disk).isEqualTo(16.0);
      assertThat(disk).isGreaterThanOrEqualTo(9.0);
      assertThat(metric(server, "kvcache_tier_hits_total", "spill")).isEqualTo(0.0);
      // written past the page cache, and not read since (no scrub): each read past it too
      assertThat(scalar(server, "kvcache_disk_direct_read_bytes_total"))
          .as("bytes read past the page cache").isEqualTo(disk * BLOCK);

      TieredCache cache = (TieredCache) server.context.getBean(KvCache.class);
      assertThat(ram).isEqualTo((double) cache.tieredStats().ramHits());
      assertThat(disk).isEqualTo((double) cache.tieredStats().lowerHits());
      assertThat(metric(server, "kvcache_tier_bytes_capacity", "ram"))
          .isEqualTo((double) cache.ramStats().capacityBytes()).isEqualTo(8.0 * (1 << 20));
      assertThat(metric(server, "kvcache_tier_bytes_capacity", "disk"))
          .isEqualTo((double) cache.lowerStats().capacityBytes()).isPositive();
      // all sixteen blocks are on disk; RAM holds some of them
      assertThat(metric(server, "kvcache_tier_bytes_used", "disk"))
          .isGreaterThanOrEqualTo(16.0 * BLOCK);
      assertThat(metric(server, "kvcache_tier_bytes_used", "ram"))
          .isEqualTo((double) cache.ramStats().bytesUsed()).isBetween(1.0 * BLOCK, 8.0 * BLOCK);
    }
  }

  @Test
  void theDiskTiersScrubIsAMetric() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      byte[] block = new byte[BLOCK];
      new Random(7).nextBytes(block);
      for (int i = 0; i < 4; i++) {
        assertThat(server.put("default", BlockApiTest.key(i), block).statusCode()).isEqualTo(201);
      }
      long deadline = System.nanoTime() + 20_000_000_000L;
      double scrubbed = 0;
      while (scrubbed == 0 && System.nanoTime() < deadline) {
        Thread.sleep(50);
        scrubbed = scalar(server, "kvcache_scrub_bytes_total");
      }
      assertThat(scrubbed).as("bytes the scrub checked").isPositive();
      assertThat(scalar(server, "kvcache_scrub_damaged_total")).isZero();
      assertThat(scalar(server, "kvcache_scrub_passes_total")).isNotNegative();
    }
  }

  @Test
  void aScrubRateOfZeroTurnsTheScrubOff() throws Exception {
    byte[] block = new byte[BLOCK];
    new Random(8).nextBytes(block);
    try (TestServer scrubbing = TestServer.start(dir.resolve("scrubbing"));
        TestServer off = TestServer.start(dir.resolve("off"),
            Map.of("kvcache.cache.disk-scrub-rate", "0"))) {
      for (int i = 0; i < 4; i++) {
        assertThat(scrubbing.put("default", BlockApiTest.key(i), block).statusCode()).isEqualTo(201);
        assertThat(off.put("default", BlockApiTest.key(i), block).statusCode()).isEqualTo(201);
      }
      long deadline = System.nanoTime() + 20_000_000_000L;
      while (scalar(scrubbing, "kvcache_scrub_bytes_total") == 0 && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      assertThat(scalar(scrubbing, "kvcache_scrub_bytes_total")).as("the default rate").isPositive();
      assertThat(scalar(off, "kvcache_scrub_bytes_total")).as("a rate of 0").isZero();
      assertThat(scalar(off, "kvcache_scrub_passes_total")).isZero();
    }
  }

  private static double scalar(TestServer server, String name) throws Exception {
    String text = server.metrics();
    Matcher m = Pattern.compile("(?m)^" + name + "(\\{[^}]*\\})? (\\S+)$").matcher(text);
    assertThat(m.find()).as("%s in:%n%s", name, text).isTrue();
    return Double.parseDouble(m.group(2));
  }

  @Test
  void aRamOnlyServerHasOnlyItsRamTier() throws Exception {
    try (TestServer server = TestServer.start(dir, Map.of("kvcache.cache.disk-dir", ""))) {
      byte[] block = new byte[4096];
      assertThat(server.put("default", BlockApiTest.key(1), block).statusCode()).isEqualTo(201);
      assertThat(server.get("default", BlockApiTest.key(1)).statusCode()).isEqualTo(200);
      assertThat(server.get("default", BlockApiTest.key(2)).statusCode()).isEqualTo(404);
      assertThat(metric(server, "kvcache_tier_hits_total", "ram")).isEqualTo(1.0);
      assertThat(metric(server, "kvcache_tier_bytes_capacity", "ram")).isEqualTo(64.0 * (1 << 20));
      assertThat(hasTier(server, "disk")).isFalse();
    }
  }
}
