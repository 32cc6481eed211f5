package dev.kvcache.server;

import static dev.kvcache.server.BlockApiTest.assertError;
import static dev.kvcache.server.BlockApiTest.body;
import static dev.kvcache.server.BlockApiTest.key;
import static dev.kvcache.testkit.TestBytes.random;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.KvCache;
import dev.kvcache.tiered.TieredCache;
import dev.kvcache.wire.Wire;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PinnedLookupTest {

  /** The answer of a lookup that finds nothing: no blocks, no runs, nothing to load. */
  static final String NOTHING_FOUND = "{\"present\":0,\"tiers\":[],\"load_us\":0}";

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
    for (int i = 0; i < 2; i++) {
      HttpResponse<byte[]> block = fetch(lease, i);
      assertThat(block.body()).isEqualTo(blocks[i]);
      CRC32C crc = new CRC32C();
      crc.update(blocks[i]);
      assertThat(block.headers().firstValue(Wire.CHECKSUM)).as("checked end to end, as a GET's")
          .contains(Wire.checksum((int) crc.getValue()));
    }
    assertError(fetch(lease, 2), 404, "no-block");

    HttpResponse<byte[]> release = server.send(HttpRequest.newBuilder(
        server.uri("/v1/namespaces/default/leases/" + lease)).DELETE());
    assertThat(release.statusCode()).isEqualTo(204);
    assertError(fetch(lease, 1), 404, "no-lease");
  }

  @Test
  void aNamespaceAtItsPinLimitLeavesTheOthersTheirPins(@TempDir Path own) throws Exception {
    try (TestServer limited = TestServer.start(own, java.util.Map.of(
        "kvcache.max-pins", "10", "kvcache.max-pins-per-namespace", "2"))) {
      for (String ns : new String[] {"default", "other"}) {
        assertThat(limited.put(ns, key(300), random(4000, 3)).statusCode()).isEqualTo(201);
      }
      java.util.function.Function<String, HttpResponse<byte[]>> pinIn = ns -> {
        try {
          return limited.send(HttpRequest.newBuilder(limited.uri("/v1/namespaces/" + ns
                  + "/lookup")).header("Content-Type", "application/json")
              .POST(HttpRequest.BodyPublishers.ofString(
                  "{\"keys\":[\"" + key(300) + "\"],\"pin_ms\":30000}")));
        } catch (Exception e) {
          throw new AssertionError(e);
        }
      };
      String first = lease(pinIn.apply("default"));
      lease(pinIn.apply("default"));
      HttpResponse<byte[]> refused = pinIn.apply("default");
      assertError(refused, 503, "too-many-pins");
      assertThat(body(refused)).contains("namespace 'default'");
      lease(pinIn.apply("other")); // the other tenant still pins
      assertThat(limited.send(HttpRequest.newBuilder(
          limited.uri("/v1/namespaces/default/leases/" + first)).DELETE()).statusCode())
          .isEqualTo(204);
      lease(pinIn.apply("default")); // a released pin leaves room
    }
  }

  @Test
  void aPutWhileRamIsPinnedFullIsStoredOnDisk(@TempDir Path own) throws Exception {
    int block = 1 << 20;
    try (TestServer small = TestServer.start(own, java.util.Map.of(
        "kvcache.cache.ram-bytes", "8MiB", "kvcache.cache.max-block-bytes", block + "B"))) {
      TieredCache cache = (TieredCache) small.context.getBean(KvCache.class);
      for (int i = 0; i < 10; i++) { // more than RAM holds, each pinned as soon as it is stored
        HttpResponse<byte[]> put = small.put("default", key(100 + i), random(block, i));
        assertThat(put.statusCode()).as(i + ": " + body(put)).isEqualTo(201);
        HttpResponse<byte[]> pinned = small.send(HttpRequest.newBuilder(
                small.uri("/v1/namespaces/default/lookup"))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(
                "{\"keys\":[\"" + key(100 + i) + "\"],\"pin_ms\":30000}")));
        assertThat(body(pinned)).contains("\"present\":1");
      }
      long ramBlocks = cache.ramStats().blocks();
      long lowerPuts = cache.lowerStats().puts();

      byte[] onDisk = random(block, 99);
      HttpResponse<byte[]> last = small.put("default", key(200), onDisk);
      assertThat(last.statusCode()).as(body(last)).isEqualTo(201);
      assertThat(cache.ramStats().blocks()).as("RAM is pinned full").isEqualTo(ramBlocks);
      assertThat(cache.lowerStats().puts()).isEqualTo(lowerPuts + 1);
      assertThat(small.get("default", key(200)).body()).isEqualTo(onDisk);
    }
  }

  @Test
  void aPinLetsGoWhenItsTimeIsUp() throws Exception {
    server.put("default", key(11), random(100, 1));
    // long enough for the first fetch to come before the expiry on a loaded machine
    String lease = lease(lookup("{\"keys\":[\"" + key(11) + "\"],\"pin_ms\":1000}"));
    assertThat(fetch(lease, 0).statusCode()).isEqualTo(200);
    Thread.sleep(1300);
    assertError(fetch(lease, 0), 404, "no-lease");
  }

  @Test
  void aLookupWithoutAPinOrWithNothingFoundGivesNoLease() throws Exception {
    assertThat(body(lookup("{\"keys\":[\"" + key(21) + "\"]}"))).isEqualTo(NOTHING_FOUND);
    assertThat(body(lookup("{\"keys\":[\"" + key(21) + "\"],\"pin_ms\":1000}")))
        .isEqualTo(NOTHING_FOUND);
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
