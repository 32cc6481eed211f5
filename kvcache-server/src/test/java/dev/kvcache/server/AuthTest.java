package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.server.access.Access;
import io.micronaut.web.router.Router;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bearer tokens: every request under {@code /v1} needs a known one with the right its route
 * declares on the namespace it names; the metrics need one with the metrics right, and the
 * health's details too; Micronaut's other endpoints are off.
 */
class AuthTest {

  static final String WRITER = "w".repeat(40);
  static final String READER = "r".repeat(40);
  static final String SCRAPER = "m".repeat(40);
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
        "kvcache.auth.tokens.viewer.read", "default,other",
        "kvcache.auth.tokens.scraper.secret", SCRAPER,
        "kvcache.auth.tokens.scraper.metrics", "true"));
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

  private static HttpResponse<byte[]> endpoint(String path, String token) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(server.uri(path));
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    return server.send(b);
  }

  @Test
  void theMetricsNeedATokenWithTheMetricsRight() throws Exception {
    HttpResponse<byte[]> none = endpoint("/prometheus", null);
    assertThat(none.statusCode()).isEqualTo(401);
    assertThat(body(none)).doesNotContain("kvcache_");
    HttpResponse<byte[]> engine = endpoint("/prometheus", WRITER);
    assertThat(engine.statusCode()).isEqualTo(403);
    assertThat(body(engine)).contains("metrics").doesNotContain("kvcache_");
    HttpResponse<byte[]> scraper = endpoint("/prometheus", SCRAPER);
    assertThat(scraper.statusCode()).isEqualTo(200);
    assertThat(body(scraper)).contains("kvcache_hits_total");
  }

  @Test
  void healthGivesItsDetailsOnlyToATokenWithTheMetricsRight() throws Exception {
    for (String token : new String[] {null, WRITER, READER}) {
      HttpResponse<byte[]> health = endpoint("/health", token);
      assertThat(health.statusCode()).isEqualTo(200);
      assertThat(body(health)).as("the status alone").isEqualTo("{\"status\":\"UP\"}");
    }
    HttpResponse<byte[]> scraper = endpoint("/health", SCRAPER);
    assertThat(scraper.statusCode()).isEqualTo(200);
    assertThat(body(scraper)).contains("\"status\":\"UP\"", "\"details\"");
    for (String probe : new String[] {"/health/readiness", "/health/liveness"}) {
      assertThat(endpoint(probe, null).statusCode()).as(probe).isEqualTo(200);
    }
  }

  @Test
  void everyRouteUnderV1DeclaresTheRightItNeeds() {
    List<String> routes = new ArrayList<>();
    server.context.getBean(Router.class).uriRoutes()
        .filter(r -> r.getUriMatchTemplate().toString().startsWith("/v1/"))
        .forEach(r -> {
          Access.Right right = r.getAnnotationMetadata()
              .enumValue(Access.class, Access.Right.class).orElse(null);
          routes.add(r.getHttpMethod() + " " + r.getUriMatchTemplate() + " " + right);
        });
    assertThat(routes).as("the API's routes").hasSizeGreaterThanOrEqualTo(9)
        .noneMatch(route -> route.endsWith(" null"));
    assertThat(routes).contains(
        "PUT /v1/namespaces/{namespace}/blocks/{key} WRITE",
        "DELETE /v1/namespaces/{namespace}/blocks/{key} WRITE",
        "GET /v1/namespaces/{namespace}/blocks/{key} READ",
        "DELETE /v1/namespaces/{namespace}/leases/{lease} READ",
        "DELETE /v1/namespaces/{namespace}/objects WRITE");
  }

  @Test
  void micronautsOtherEndpointsAreOff() throws Exception {
    for (String path : new String[] {"/metrics", "/beans", "/env", "/routes", "/loggers",
        "/info", "/threaddump", "/refresh"}) {
      assertThat(endpoint(path, SCRAPER).statusCode()).as(path).isEqualTo(404);
    }
  }
}
