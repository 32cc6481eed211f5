package dev.kvcache.server;

import static dev.kvcache.server.BlockApiTest.assertError;
import static dev.kvcache.server.BlockApiTest.body;
import static dev.kvcache.server.BlockApiTest.key;
import static dev.kvcache.server.BlockApiTest.random;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PinnedLookupTest {

  @TempDir static Path dir;
  static TestServer server;

  @BeforeAll
  static void start() {
    server = TestServer.start(dir);
  }

  @AfterAll
  static void stop() {
    server.close();
  }

  static HttpResponse<byte[]> lookup(String json) throws Exception {
    return server.send(HttpRequest.newBuilder(server.uri("/v1/namespaces/default/lookup"))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json)));
  }

  static String lease(HttpResponse<byte[]> lookup) {
    Matcher m = Pattern.compile("\"lease\":\"([0-9a-f]{32})\"").matcher(body(lookup));
    assertThat(m.find()).as(body(lookup)).isTrue();
    return m.group(1);
  }

  HttpResponse<byte[]> fetch(String lease, int index) throws Exception {
    return server.send(HttpRequest.newBuilder(
        server.uri("/v1/namespaces/default/leases/" + lease + "/blocks/" + index)));
  }

  @Test
  void aPinnedLookupServesTheBlocksItFoundEvenAfterTheyAreDeleted() throws Exception {
    byte[][] blocks = {random(3000, 1), random(5000, 2)};
    server.put("default", key(1), blocks[0]);
    server.put("default", key(2), blocks[1]);
    HttpResponse<byte[]> found = lookup("{\"keys\":[\"" + key(1) + "\",\"" + key(2) + "\",\""
        + key(3) + "\"],\"pin_ms\":10000}");
    assertThat(found.statusCode()).isEqualTo(200);
    assertThat(body(found)).contains("\"present\":2").contains("\"expires_in_ms\":10000")
        .contains("\"lengths\":[3000,5000]");
    String lease = lease(found);

    server.send(HttpRequest.newBuilder(server.uri(TestServer.blockPath("default", key(1)))).DELETE());
    assertThat(server.get("default", key(1)).statusCode()).isEqualTo(404);
    assertThat(fetch(lease, 0).body()).isEqualTo(blocks[0]);
    assertThat(fetch(lease, 1).body()).isEqualTo(blocks[1]);
    assertError(fetch(lease, 2), 404, "no-block");

    HttpResponse<byte[]> release = server.send(HttpRequest.newBuilder(
        server.uri("/v1/namespaces/default/leases/" + lease)).DELETE());
    assertThat(release.statusCode()).isEqualTo(204);
    assertError(fetch(lease, 1), 404, "no-lease");
  }

  @Test
  void aPinLetsGoWhenItsTimeIsUp() throws Exception {
    server.put("default", key(11), random(100, 1));
    String lease = lease(lookup("{\"keys\":[\"" + key(11) + "\"],\"pin_ms\":200}"));
    assertThat(fetch(lease, 0).statusCode()).isEqualTo(200);
    Thread.sleep(400);
    assertError(fetch(lease, 0), 404, "no-lease");
  }

  @Test
  void aLookupWithoutAPinOrWithNothingFoundGivesNoLease() throws Exception {
    assertThat(body(lookup("{\"keys\":[\"" + key(21) + "\"]}"))).isEqualTo("{\"present\":0}");
    assertThat(body(lookup("{\"keys\":[\"" + key(21) + "\"],\"pin_ms\":1000}")))
        .isEqualTo("{\"present\":0}");
  }

  @Test
  void badPinsAndLeasesGetTheirErrors() throws Exception {
    assertError(lookup("{\"keys\":[\"" + key(1) + "\"],\"pin_ms\":0}"), 400, "bad-lookup");
    assertError(lookup("{\"keys\":[\"" + key(1) + "\"],\"pin_ms\":600000}"), 400, "bad-lookup");
    assertError(fetch("00000000000000000000000000000000", 0), 404, "no-lease");
    assertError(server.send(HttpRequest.newBuilder(
        server.uri("/v1/namespaces/default/leases/00000000000000000000000000000000")).DELETE()),
        404, "no-lease");
  }
}
