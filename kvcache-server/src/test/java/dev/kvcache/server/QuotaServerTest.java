package dev.kvcache.server;

import static dev.kvcache.server.BlockApiTest.key;
import static dev.kvcache.testkit.TestBytes.random;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Quotas set in the server's settings ({@code kvcache.quotas.<namespace>.ram-bytes} and {@code
 * disk-bytes}): a namespace that puts past its quota evicts only its own blocks, each quota's use is in the metrics, and a
 * quota the server cannot keep stops the start with the setting named.
 */
class QuotaServerTest {

  private static final int BLOCK = 64 << 10;

  @TempDir Path dir;

  @Test
  void aNamespacePastItsQuotaEvictsOnlyItsOwnBlocks() throws Exception {
    try (TestServer server = TestServer.start(dir, Map.of(
        "kvcache.namespaces", "default,flood,kept",
        "kvcache.cache.ram-bytes", "8MiB",
        "kvcache.cache.disk-dir", "",
        "kvcache.quotas.flood.ram-bytes", "1MiB",
        "kvcache.quotas.kept.ram-bytes", "2MiB"))) {
      for (int i = 0; i < 30; i++) {
        assertThat(server.put("kept", key(i), random(BLOCK, i)).statusCode()).isEqualTo(201);
      }
      for (int i = 0; i < 160; i++) { // ten times its quota
        assertThat(server.put("flood", key(i), random(BLOCK, i)).statusCode()).isEqualTo(201);
      }
      for (int i = 0; i < 30; i++) {
        HttpResponse<byte[]> got = server.get("kept", key(i));
        assertThat(got.statusCode()).as("kept block " + i).isEqualTo(200);
        assertThat(got.body()).isEqualTo(random(BLOCK, i));
      }
      assertThat(server.get("flood", key(0)).statusCode()).as("the flood's first").isEqualTo(404);
      assertThat(server.get("flood", key(159)).statusCode()).as("the flood's last").isEqualTo(200);

      String metrics = server.metrics();
      assertThat(metrics)
          .contains("kvcache_quota_bytes{namespace=\"flood\",tier=\"ram\"} 1048576.0")
          .contains("kvcache_quota_bytes{namespace=\"kept\",tier=\"ram\"} 2097152.0")
          .contains("kvcache_quota_used_bytes{namespace=\"kept\",tier=\"ram\"} "
              + (30.0 * BLOCK))
          .contains("kvcache_quota_used_bytes{namespace=\"*\",tier=\"ram\"} 0.0")
          .containsPattern("kvcache_quota_used_bytes\\{namespace=\"flood\",tier=\"ram\"} "
              + "(1048576|983040)\\.0");
    }
  }

  @Test
  void aNamespacePastItsDiskQuotaReclaimsOnlyItsOwnSuperBlocks() throws Exception {
    int block = 256 << 10;
    try (TestServer server = TestServer.start(dir, Map.of(
        "kvcache.namespaces", "default,flood,kept",
        "kvcache.cache.ram-bytes", "16MiB",
        "kvcache.cache.max-block-bytes", "1MiB",
        "kvcache.cache.disk-capacity", "24MiB", // super-blocks of 3 MiB
        "kvcache.quotas.flood.disk-bytes", "12MiB"))) {
      // within the others' room less the two super-blocks the tier keeps free ahead of writers
      for (int i = 0; i < 8; i++) {
        assertThat(server.put("kept", key(i), random(block, i)).statusCode()).isEqualTo(201);
      }
      for (int i = 0; i < 480; i++) { // ten times its disk quota, through 16 MiB of RAM
        assertThat(server.put("flood", key(i), random(block, i)).statusCode()).isEqualTo(201);
      }
      for (int i = 0; i < 8; i++) {
        HttpResponse<byte[]> got = server.get("kept", key(i));
        assertThat(got.statusCode()).as("kept block " + i).isEqualTo(200);
        assertThat(got.body()).isEqualTo(random(block, i));
      }
      assertThat(server.get("flood", key(0)).statusCode()).as("the flood's first").isEqualTo(404);
      assertThat(server.metrics())
          .contains("kvcache_quota_bytes{namespace=\"flood\",tier=\"disk\"} 1.2582912E7")
          .containsPattern("kvcache_quota_used_bytes\\{namespace=\"flood\",tier=\"disk\"} "
              + "[0-9.E]+\n");
    }
  }

  @Test
  void aDiskQuotaWithoutADiskTierIsNamed() {
    assertThatThrownBy(() -> TestServer.start(dir, Map.of(
        "kvcache.cache.disk-dir", "",
        "kvcache.quotas.default.disk-bytes", "1GiB")))
        .hasStackTraceContaining("settings 'kvcache.quotas.*.disk-bytes' need a disk tier");
  }

  @Test
  void aQuotaForANamespaceNotServedIsNamed() {
    assertThatThrownBy(() -> TestServer.start(dir, Map.of(
        "kvcache.quotas.ghost.ram-bytes", "1MiB")))
        .hasStackTraceContaining("kvcache.quotas.ghost.*: 'ghost' is not one of kvcache.namespaces");
  }

  @Test
  void quotasThatLeaveNoRamToTheOthersAreNamed() {
    assertThatThrownBy(() -> TestServer.start(dir, Map.of(
        "kvcache.cache.ram-bytes", "4MiB",
        "kvcache.quotas.default.ram-bytes", "4MiB")))
        .hasStackTraceContaining("settings 'kvcache.quotas.*.ram-bytes' and"
            + " 'kvcache.cache.ram-bytes'")
        .hasStackTraceContaining("must leave some of the RAM tier's capacity");
    assertThatThrownBy(() -> TestServer.start(dir, Map.of(
        "kvcache.quotas.default.ram-bytes", "plenty")))
        .hasStackTraceContaining("setting 'kvcache.quotas.default.ram-bytes' is 'plenty'");
  }
}
