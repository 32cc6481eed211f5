package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.ram.RamPolicy;
import dev.kvcache.server.cache.CacheSettings;
import io.micronaut.http.netty.channel.EventLoopGroupRegistry;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StartupTest {

  @TempDir Path dir;

  @Test
  void listeningBeyondLoopbackWithoutTokensIsRefused() {
    assertThatThrownBy(() -> TestServer.start(dir, Map.of("micronaut.server.host", "0.0.0.0")))
        .rootCause()
        .hasMessageContaining("refusing to listen on '0.0.0.0' without authentication")
        .hasMessageContaining("kvcache.auth.tokens");
  }

  @Test
  void listeningBeyondLoopbackWithTokensStarts() {
    try (TestServer server = TestServer.start(dir, Map.of(
        "micronaut.server.host", "0.0.0.0",
        "kvcache.auth.tokens.a.secret", "s".repeat(32),
        "kvcache.auth.tokens.a.read", "default"))) {
      assertThat(server.server.isRunning()).isTrue();
    }
  }

  @Test
  void aShortSecretIsRefused() {
    assertThatThrownBy(() -> TestServer.start(dir, Map.of(
        "kvcache.auth.tokens.a.secret", "short")))
        .rootCause()
        .hasMessageContaining("kvcache.auth.tokens.a.secret must be at least 32 characters");
  }

  @Test
  void aMalformedCacheSettingIsNamed() {
    assertThatThrownBy(() -> TestServer.start(dir, Map.of("kvcache.cache.ram-bytes", "lots")))
        .hasStackTraceContaining("setting 'kvcache.cache.ram-bytes' is 'lots'");
  }

  @Test
  void aDiskTooSmallForTheLargestBlockNamesTheServersSettings() {
    assertThatThrownBy(() -> TestServer.start(dir, Map.of(
        "kvcache.cache.max-block-bytes", "64MiB", "kvcache.cache.disk-capacity", "200MiB")))
        .hasStackTraceContaining("setting 'kvcache.cache.disk-capacity' must be at least 4"
            + " super-blocks")
        .hasStackTraceContaining("or lower the largest block");
  }

  @Test
  void theSpillThreadsCanBeSetAndABadCountIsNamed() {
    try (TestServer server = TestServer.start(dir, Map.of("kvcache.cache.spill-threads", "3"))) {
      assertThat(server.context.getBean(CacheSettings.class).toConfig().tiered().spillThreads())
          .isEqualTo(3);
    }
    assertThatThrownBy(() ->
        TestServer.start(dir.resolve("s"), Map.of("kvcache.cache.spill-threads", "0")))
        .hasStackTraceContaining("setting 'kvcache.cache.spill-threads' is '0', expected 1 to 64");
  }

  @Test
  void blocksWrittenPastThePageCacheAreReadBackAfterARestartAndABadValueIsNamed()
      throws Exception {
    byte[] block = new byte[(3 << 20) + 5];
    new Random(5).nextBytes(block);
    Map<String, Object> direct = Map.of("kvcache.cache.disk-direct-writes", "true",
        "kvcache.cache.durability", "write_through");
    try (TestServer server = TestServer.start(dir, direct)) {
      assertThat(server.put("default", BlockApiTest.key(1), block).statusCode()).isEqualTo(201);
    }
    try (TestServer server = TestServer.start(dir, direct)) { // RAM starts empty: from the disk
      HttpResponse<byte[]> got = server.get("default", BlockApiTest.key(1));
      assertThat(got.statusCode()).isEqualTo(200);
      assertThat(got.body()).isEqualTo(block);
    }
    assertThatThrownBy(() ->
        TestServer.start(dir.resolve("d"), Map.of("kvcache.cache.disk-direct-writes", "yes")))
        .hasStackTraceContaining("setting 'kvcache.cache.disk-direct-writes' is 'yes'");
  }

  @Test
  void aMalformedScrubRateIsNamed() {
    assertThatThrownBy(() ->
        TestServer.start(dir, Map.of("kvcache.cache.disk-scrub-rate", "fast")))
        .hasStackTraceContaining("setting 'kvcache.cache.disk-scrub-rate' is 'fast'");
  }

  @Test
  void theRamPolicyIsChosenByNameAndAnUnknownOneIsNamed() {
    try (TestServer server =
        TestServer.start(dir, Map.of("kvcache.cache.ram-policy", "w_tiny_lfu"))) {
      assertThat(server.context.getBean(CacheSettings.class).toConfig().ramPolicy())
          .isEqualTo(RamPolicy.W_TINY_LFU);
    }
    assertThatThrownBy(() ->
        TestServer.start(dir.resolve("p"), Map.of("kvcache.cache.ram-policy", "fifo")))
        .hasStackTraceContaining("setting 'kvcache.cache.ram-policy' is 'fifo'")
        .hasStackTraceContaining("lru, w_tiny_lfu");
  }

  @Test
  void theServersOwnSizesTakeUnitsAndAMalformedOneIsNamed() {
    try (TestServer server = TestServer.start(dir, Map.of("kvcache.max-batch-bytes", "1MiB",
        "kvcache.write-buffer-bytes", "1MiB", "kvcache.http2-connection-window", "32MiB"))) {
      assertThat(server.server.isRunning()).isTrue();
    }
    // a start that fails keeps its directory locked in this process: each gets its own
    assertThatThrownBy(() -> TestServer.start(dir.resolve("a"), Map.of("kvcache.max-batch-bytes", "lots")))
        .hasStackTraceContaining("setting 'kvcache.max-batch-bytes' is 'lots'");
    assertThatThrownBy(() -> TestServer.start(dir.resolve("b"), Map.of("kvcache.http2-write-quantum", "0")))
        .hasStackTraceContaining("setting 'kvcache.http2-write-quantum' is '0'");
  }

  @Test
  void theEventLoopThreadsCanBeSet() {
    try (TestServer server = TestServer.start(dir,
        Map.of("micronaut.netty.event-loops.default.num-threads", 3))) {
      assertThat(server.context.getBean(EventLoopGroupRegistry.class).getDefaultEventLoopGroup())
          .hasSize(3);
    }
  }

  @Test
  void theWelcomeSaysWhereItListensAndHowToTryIt() {
    try (TestServer server = TestServer.start(dir)) {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream();
      KvCacheServer.printWelcome(server.server, new PrintStream(bytes, true, StandardCharsets.UTF_8));
      String welcome = bytes.toString(StandardCharsets.UTF_8);
      assertThat(welcome)
          .contains("listening on " + server.server.getURL())
          .contains("curl -X PUT")
          .contains("curl --http2-prior-knowledge " + server.server.getURL() + "/v1/namespaces/default/blocks/");
    }
  }

  @Test
  void theS3ApiIsOnByDefaultAndTheWelcomeNamesBothPorts() throws Exception {
    // both ports -1: any free ones, which the welcome names
    try (TestServer server = TestServer.start(dir, Map.of())) {
      String welcome = welcome(server);
      java.util.regex.Matcher m = java.util.regex.Pattern
          .compile("listening on (http://127.0.0.1:\\d+) .*S3 API: (http://127.0.0.1:\\d+) ",
              java.util.regex.Pattern.DOTALL).matcher(welcome);
      assertThat(m.find()).as(welcome).isTrue();
      java.net.http.HttpResponse<String> health = server.http.send(java.net.http.HttpRequest
          .newBuilder(java.net.URI.create(m.group(1) + "/health")).build(),
          java.net.http.HttpResponse.BodyHandlers.ofString());
      assertThat(health.body()).contains("UP");
      java.net.http.HttpResponse<String> buckets = server.http.send(java.net.http.HttpRequest
          .newBuilder(java.net.URI.create(m.group(2) + "/")).build(),
          java.net.http.HttpResponse.BodyHandlers.ofString());
      assertThat(buckets.body()).contains("<ListAllMyBucketsResult").contains("<Name>default</Name>");
    }
    try (TestServer server = TestServer.start(dir, Map.of("kvcache.s3.enabled", false))) {
      assertThat(welcome(server)).doesNotContain("S3 API");
      assertThat(((io.micronaut.http.server.netty.NettyHttpServer) server.server).getBoundPorts())
          .hasSize(1);
    }
  }

  private static String welcome(TestServer server) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    KvCacheServer.printWelcome(server.server, new PrintStream(bytes, true, StandardCharsets.UTF_8));
    return bytes.toString(StandardCharsets.UTF_8);
  }
}
