package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AuthTest {

  static final String WRITER = "w".repeat(40);
  static final String READER = "r".repeat(40);
  static final String KEY = "0123456789abcdef0123456789abcdef";

  @TempDir static Path dir;
  static TestServer server;

  @BeforeAll
  static void start() {
    server = TestServer.start(dir, Map.of(
        "kvcache.auth.tokens.engine.secret", WRITER,
        "kvcache.auth.tokens.engine.read", "default",
        "kvcache.auth.tokens.engine.write", "default",
        "kvcache.auth.tokens.viewer.secret", READER,
        "kvcache.auth.tokens.viewer.read", "default,other"));
  }

  @AfterAll
  static void stop() {
    server.close();
  }

  HttpResponse<byte[]> send(String method, String namespace, String token) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(server.uri(TestServer.blockPath(namespace, KEY)))
        .header("Content-Type", "application/octet-stream")
        .method(method, method.equals("PUT")
            ? HttpRequest.BodyPublishers.ofString("block")
            : HttpRequest.BodyPublishers.noBody());
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    return server.send(b);
  }

  static String body(HttpResponse<byte[]> r) {
    return new String(r.body(), StandardCharsets.UTF_8);
  }

  @Test
  void withoutAValidTokenEveryRequestIs401() throws Exception {
    for (String token : new String[] {null, "", "x".repeat(40), WRITER + "x"}) {
      for (String method : new String[] {"GET", "PUT", "DELETE"}) {
        HttpResponse<byte[]> r = send(method, "default", token);
        assertThat(r.statusCode()).as(method + " with " + token).isEqualTo(401);
        assertThat(r.headers().firstValue("WWW-Authenticate")).hasValue("Bearer realm=\"kvcache\"");
        assertThat(body(r)).contains("\"error\":\"unauthorized\"");
      }
    }
  }

  @Test
  void theSchemeIsReadInAnyCase() throws Exception {
    for (String scheme : new String[] {"bearer", "BEARER", "bEaReR"}) {
      HttpResponse<byte[]> r = server.send(HttpRequest.newBuilder(
              server.uri(TestServer.blockPath("default", KEY)))
          .header("Content-Type", "application/octet-stream")
          .header("Authorization", scheme + " " + WRITER)
          .PUT(HttpRequest.BodyPublishers.ofString("block")));
      assertThat(r.statusCode()).as(scheme).isEqualTo(201);
    }
  }

  @Test
  void aTokenActsOnlyWithinItsScope() throws Exception {
    assertThat(send("PUT", "default", WRITER).statusCode()).isEqualTo(201);
    assertThat(send("GET", "default", WRITER).statusCode()).isEqualTo(200);
    assertThat(send("GET", "default", READER).statusCode()).isEqualTo(200);

    HttpResponse<byte[]> readerWrites = send("PUT", "default", READER);
    assertThat(readerWrites.statusCode()).isEqualTo(403);
    assertThat(body(readerWrites)).contains("\"error\":\"forbidden\"");
    assertThat(send("DELETE", "default", READER).statusCode()).isEqualTo(403);
    assertThat(send("GET", "other", WRITER).statusCode()).isEqualTo(403);
    assertThat(send("PUT", "other", WRITER).statusCode()).isEqualTo(403);

    // nothing the refused requests did reached the cache
    assertThat(send("GET", "default", READER).body()).isEqualTo("block".getBytes(StandardCharsets.UTF_8));
    assertThat(send("GET", "other", READER).statusCode()).isEqualTo(404);
  }

  @Test
  void healthAndMetricsNeedNoToken() throws Exception {
    assertThat(server.send(HttpRequest.newBuilder(server.uri("/health"))).statusCode()).isEqualTo(200);
    assertThat(server.send(HttpRequest.newBuilder(server.uri("/prometheus"))).statusCode())
        .isEqualTo(200);
  }
}
