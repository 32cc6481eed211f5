package dev.kvcache.server;

import static dev.kvcache.server.BatchGetTest.awaitNoLeases;
import static dev.kvcache.server.BlockApiTest.assertError;
import static dev.kvcache.server.BlockApiTest.key;
import static dev.kvcache.testkit.TestBytes.random;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.server.http.FastGet;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * HTTP/2 GETs of cached blocks, answered ahead of Micronaut: the same answers as the controller's,
 * and everything else left to Micronaut's errors.
 */
class FastGetTest {

  static final String READER = "r".repeat(40);
  static final String OTHER = "o".repeat(40);

  @TempDir Path dir;

  /** An HTTP/2 client; its first request upgrades the connection from HTTP/1.1. */
  static HttpClient h2(TestServer server) throws Exception {
    HttpClient h2 = HttpClient.newBuilder().version(HttpClient.Version.HTTP_2).build();
    HttpResponse<byte[]> upgrade = h2.send(HttpRequest.newBuilder(server.uri("/health")).build(),
        HttpResponse.BodyHandlers.ofByteArray());
    assertThat(upgrade.statusCode()).isEqualTo(200);
    return h2;
  }

  static HttpResponse<byte[]> get(HttpClient h2, TestServer server, String path, String token)
      throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(server.uri(path));
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    HttpResponse<byte[]> r = h2.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
    assertThat(r.version()).isEqualTo(HttpClient.Version.HTTP_2);
    return r;
  }

  static long answered(TestServer server) {
    return server.context.getBean(FastGet.class).answered();
  }

  @Test
  void aCachedBlockComesWithTheControllersHeadersAndBytes() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      byte[] block = random((2 << 20) + 7, 1);
      assertThat(server.put("default", key(1), block).statusCode()).isEqualTo(201);
      HttpClient h2 = h2(server);

      HttpResponse<byte[]> fast = get(h2, server, TestServer.blockPath("default", key(1)), null);
      assertThat(answered(server)).isEqualTo(1);
      HttpResponse<byte[]> routed = server.get("default", key(1)); // HTTP/1.1: Micronaut
      assertThat(fast.statusCode()).isEqualTo(200);
      assertThat(fast.body()).isEqualTo(block);
      for (String header : new String[] {"content-type", "content-length", "kvcache-block-length"}) {
        assertThat(fast.headers().firstValue(header)).as(header)
            .isEqualTo(routed.headers().firstValue(header)).isPresent();
      }
      assertThat(fast.headers().firstValue("date")).isPresent();
      awaitNoLeases(server);
    }
  }

  @Test
  void missesBadKeysUnknownNamespacesAndOtherRequestsGetMicronautsAnswers() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      byte[] block = random(1000, 2);
      assertThat(server.put("default", key(2), block).statusCode()).isEqualTo(201);
      HttpClient h2 = h2(server);

      assertError(get(h2, server, TestServer.blockPath("default", key(3)), null), 404, "not-cached");
      assertError(get(h2, server, TestServer.blockPath("default", "xyz"), null), 400, "bad-key");
      assertError(get(h2, server, TestServer.blockPath("nope", key(2)), null), 404,
          "unknown-namespace");
      HttpResponse<byte[]> query =
          get(h2, server, TestServer.blockPath("default", key(2)) + "?x=1", null);
      assertThat(query.body()).isEqualTo(block);
      HttpResponse<byte[]> head = h2.send(HttpRequest.newBuilder(
              server.uri(TestServer.blockPath("default", key(2))))
          .method("HEAD", HttpRequest.BodyPublishers.noBody()).build(),
          HttpResponse.BodyHandlers.ofByteArray());
      assertThat(head.statusCode()).isEqualTo(200);
      assertThat(head.headers().firstValue("kvcache-block-length")).hasValue("1000");
      assertThat(answered(server)).as("none of these went the fast way").isZero();

      assertThat(get(h2, server, TestServer.blockPath("default", key(2)), null).body())
          .isEqualTo(block);
      assertThat(answered(server)).isEqualTo(1);
      awaitNoLeases(server);
    }
  }

  @Test
  void withTokensOnlyAReaderOfTheNamespaceIsAnswered() throws Exception {
    try (TestServer server = TestServer.start(dir, Map.of(
        "kvcache.namespaces", "default,other",
        "kvcache.auth.tokens.reader.secret", READER,
        "kvcache.auth.tokens.reader.read", "default",
        "kvcache.auth.tokens.reader.write", "default",
        "kvcache.auth.tokens.other.secret", OTHER,
        "kvcache.auth.tokens.other.read", "other"))) {
      byte[] block = random(5000, 3);
      assertThat(server.send(java.net.http.HttpRequest.newBuilder(
              server.uri(TestServer.blockPath("default", key(4))))
          .header("Content-Type", "application/octet-stream")
          .header("Authorization", "Bearer " + READER)
          .PUT(HttpRequest.BodyPublishers.ofByteArray(block))).statusCode()).isEqualTo(201);
      HttpClient h2 = h2(server);
      String path = TestServer.blockPath("default", key(4));

      assertError(get(h2, server, path, null), 401, "unauthorized");
      assertError(get(h2, server, path, "x".repeat(40)), 401, "unauthorized");
      assertError(get(h2, server, path, OTHER), 403, "forbidden");
      assertThat(answered(server)).isZero();
      assertThat(get(h2, server, path, READER).body()).isEqualTo(block);
      assertThat(answered(server)).isEqualTo(1);
    }
  }

  @Test
  void aStreamResetMidBlockLetsItsLeaseGo() throws Exception {
    try (TestServer server = TestServer.start(dir);
        RawHttp2 h2 = new RawHttp2(server.server.getHost(), server.server.getPort())) {
      assertThat(server.put("default", key(6), random(4 << 20, 6)).statusCode()).isEqualTo(201);
      h2.request(1, "GET", "/health", true); // the connection's first read reaches Micronaut
      h2.flush();
      for (RawHttp2.Frame f; (f = h2.next()) != null; ) {
        if (f.stream() == 1 && (f.flags() & RawHttp2.END_STREAM) != 0) {
          break;
        }
      }
      // HTTP/2's 64 KiB windows hold the rest of the 4 MiB block back until the reset
      h2.request(3, "GET", TestServer.blockPath("default", key(6)), true);
      h2.flush();
      for (RawHttp2.Frame f; (f = h2.next()) != null; ) {
        if (f.stream() == 3 && f.type() == RawHttp2.DATA) {
          break;
        }
      }
      assertThat(answered(server)).isEqualTo(1);
      h2.reset(3);
      h2.flush();
      awaitNoLeases(server);
    }
  }

  @Test
  void offItLeavesEveryRequestToMicronaut() throws Exception {
    try (TestServer server = TestServer.start(dir, Map.of("kvcache.fast-get", false))) {
      byte[] block = random(3000, 5);
      assertThat(server.put("default", key(5), block).statusCode()).isEqualTo(201);
      HttpClient h2 = h2(server);
      assertThat(get(h2, server, TestServer.blockPath("default", key(5)), null).body())
          .isEqualTo(block);
      assertThat(answered(server)).isZero();
    }
  }
}
