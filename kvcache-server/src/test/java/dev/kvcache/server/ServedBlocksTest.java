package dev.kvcache.server;

import static dev.kvcache.server.BlockApiTest.body;
import static dev.kvcache.server.BlockApiTest.key;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Blocks served and prefill tokens avoided per namespace, and the time to send GET bodies. */
class ServedBlocksTest {

  @TempDir Path dir;

  private static HttpResponse<byte[]> post(TestServer server, String namespace, String path,
      String json) throws Exception {
    return server.send(HttpRequest.newBuilder(server.uri("/v1/namespaces/" + namespace + path))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json)));
  }

  @Test
  void everyBlockSentCountsItsNamespacesTokens() throws Exception {
    try (TestServer server = TestServer.start(dir, Map.of("kvcache.namespaces", "default,llama",
        "kvcache.tokens-per-block", "llama=512"))) {
      for (int i = 0; i < 4; i++) {
        assertThat(server.put("llama", key(i), new byte[1000 + i]).statusCode()).isEqualTo(201);
      }
      assertThat(server.put("default", key(9), new byte[100]).statusCode()).isEqualTo(201);

      // llama: a GET, a HEAD (sends no block), a miss, a batch of three (one missing),
      // a pinned lookup (sends nothing) and one pinned read, a GET over HTTP/2's fast path
      assertThat(server.get("llama", key(0)).statusCode()).isEqualTo(200);
      assertThat(server.send(HttpRequest.newBuilder(server.uri(TestServer.blockPath("llama", key(0))))
          .method("HEAD", HttpRequest.BodyPublishers.noBody())).statusCode()).isEqualTo(200);
      assertThat(server.get("llama", key(7)).statusCode()).isEqualTo(404);
      assertThat(post(server, "llama", "/batch-get", "{\"keys\":[\"" + key(1) + "\",\"" + key(8)
          + "\",\"" + key(2) + "\"]}").statusCode()).isEqualTo(200);
      String pinned = body(post(server, "llama", "/lookup",
          "{\"keys\":[\"" + key(3) + "\"],\"pin_ms\":10000}"));
      Matcher lease = Pattern.compile("\"lease\":\"([0-9a-f]+)\"").matcher(pinned);
      assertThat(lease.find()).as(pinned).isTrue();
      assertThat(server.send(HttpRequest.newBuilder(server.uri(
          "/v1/namespaces/llama/leases/" + lease.group(1) + "/blocks/0"))).statusCode())
          .isEqualTo(200);
      HttpClient h2 = FastGetTest.h2(server);
      long fastBefore = FastGetTest.answered(server);
      assertThat(FastGetTest.get(h2, server, TestServer.blockPath("llama", key(3)), null)
          .statusCode()).isEqualTo(200);
      assertThat(FastGetTest.answered(server)).isEqualTo(fastBefore + 1);
      // default: one GET
      assertThat(server.get("default", key(9)).statusCode()).isEqualTo(200);

      assertThat(server.metric("kvcache_blocks_served_total", "namespace", "llama")).isEqualTo(5.0);
      assertThat(server.metric("kvcache_prefill_tokens_avoided_total", "namespace", "llama"))
          .isEqualTo(5.0 * 512);
      assertThat(server.metric("kvcache_blocks_served_total", "namespace", "default")).isEqualTo(1.0);
      assertThat(server.metric("kvcache_prefill_tokens_avoided_total", "namespace", "default"))
          .as("no tokens per block configured for it").isNull();

      // each GET's body (two of llama's, one of default's), the batch's and the pinned read's,
      // timed until sent
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (bodies(server, "get") < 3 && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertThat(bodies(server, "get")).isEqualTo(3);
      assertThat(bodies(server, "batch-get")).isEqualTo(1);
      assertThat(bodies(server, "pinned")).isEqualTo(1);
    }
  }

  /** How many bodies {@code kvcache_get_body_seconds} timed for {@code request}. */
  private static double bodies(TestServer server, String request) throws Exception {
    Double value = server.metric("kvcache_get_body_seconds_count", "request", request);
    assertThat(value).as("kvcache_get_body_seconds_count{request=%s} in:%n%s", request,
        server.metrics()).isNotNull();
    return value;
  }

  @Test
  void aMalformedTokensPerBlockSettingStopsTheStartAndSaysWhy() {
    for (List<String> bad : List.of(List.of("llama", "is not namespace=tokens"),
        List.of("llama=0", "a positive number"), List.of("llama=x", "is not namespace=tokens"),
        List.of("other=16", "'other' is not one of kvcache.namespaces"),
        List.of("llama=16,llama=32", "given twice"))) {
      assertThatThrownBy(() -> TestServer.start(dir.resolve(bad.get(0).replace(',', '_')),
          Map.of("kvcache.namespaces", "default,llama", "kvcache.tokens-per-block", bad.get(0))))
          .as(bad.get(0))
          .hasStackTraceContaining("kvcache.tokens-per-block")
          .hasStackTraceContaining(bad.get(1));
    }
  }
}
