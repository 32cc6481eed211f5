package dev.kvcache.server;

import static dev.kvcache.testkit.TestBytes.random;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpRequest;
import java.nio.ByteBuffer;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class BlockApiTest {

  @TempDir static Path dir;
  static TestServer server;

  @BeforeAll
  static void start() {
    server = TestServer.start(dir, Map.of("kvcache.body-timeout", "1s"));
  }

  @AfterAll
  static void stop() {
    server.close();
  }

  static String key(long n) {
    return HexFormat.of().formatHex(ByteBuffer.allocate(16).putLong(0x6b76L).putLong(n).array());
  }

  static String body(HttpResponse<byte[]> response) {
    return new String(response.body(), StandardCharsets.UTF_8);
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 4096, 256 * 1024, 2 << 20, TestServer.MAX_BLOCK_BYTES})
  void aBlockComesBackAsItWasPut(int length) throws Exception {
    byte[] block = random(length, length);
    String key = key(length);
    HttpResponse<byte[]> put = server.put("default", key, block);
    assertThat(put.statusCode()).isEqualTo(201);
    assertThat(put.headers().firstValue("Kvcache-Put")).hasValue("stored");

    HttpResponse<byte[]> get = server.get("default", key);
    assertThat(get.statusCode()).isEqualTo(200);
    assertThat(get.headers().firstValue("Content-Type")).hasValue("application/octet-stream");
    assertThat(get.body()).isEqualTo(block);
  }

  @Test
  void headTellsTheLengthWithoutTheBytes() throws Exception {
    String key = key(101);
    server.put("default", key, random(12345, 1));
    HttpResponse<byte[]> head = server.send(HttpRequest.newBuilder(
        server.uri(TestServer.blockPath("default", key))).method("HEAD", HttpRequest.BodyPublishers.noBody()));
    assertThat(head.statusCode()).isEqualTo(200);
    assertThat(head.headers().firstValue("Kvcache-Block-Length")).hasValue("12345");
    assertThat(head.body()).isEmpty();

    HttpResponse<byte[]> missing = server.send(HttpRequest.newBuilder(
        server.uri(TestServer.blockPath("default", key(102)))).method("HEAD", HttpRequest.BodyPublishers.noBody()));
    assertThat(missing.statusCode()).isEqualTo(404);
  }

  @Test
  void aMissIsA404WithAJsonError() throws Exception {
    HttpResponse<byte[]> get = server.get("default", key(201));
    assertThat(get.statusCode()).isEqualTo(404);
    assertThat(get.headers().firstValue("Content-Type")).hasValue("application/json");
    assertThat(body(get)).contains("\"error\":\"not-cached\"");
  }

  @Test
  void aPutReplacesTheBlockAndADeleteRemovesIt() throws Exception {
    String key = key(301);
    server.put("default", key, random(1000, 1));
    byte[] second = random(2000, 2);
    assertThat(server.put("default", key, second).statusCode()).isEqualTo(201);
    assertThat(server.get("default", key).body()).isEqualTo(second);

    HttpResponse<byte[]> delete = server.send(
        HttpRequest.newBuilder(server.uri(TestServer.blockPath("default", key))).DELETE());
    assertThat(delete.statusCode()).isEqualTo(204);
    assertThat(server.get("default", key).statusCode()).isEqualTo(404);
    HttpResponse<byte[]> again = server.send(
        HttpRequest.newBuilder(server.uri(TestServer.blockPath("default", key))).DELETE());
    assertThat(again.statusCode()).isEqualTo(404);
  }

  @Test
  void namespacesDoNotShareBlocks() throws Exception {
    String key = key(401);
    byte[] inDefault = random(500, 1);
    byte[] inOther = random(600, 2);
    server.put("default", key, inDefault);
    assertThat(server.get("other", key).statusCode()).isEqualTo(404);
    server.put("other", key, inOther);
    assertThat(server.get("default", key).body()).isEqualTo(inDefault);
    assertThat(server.get("other", key).body()).isEqualTo(inOther);
  }

  @Test
  void lookupCountsTheLeadingBlocksPresent() throws Exception {
    for (int i = 0; i < 3; i++) {
      server.put("default", key(500 + i), random(100, i));
    }
    server.put("default", key(504), random(100, 4)); // after a gap: not counted
    String json = "{\"keys\":[\"" + key(500) + "\",\"" + key(501) + "\",\"" + key(502) + "\",\""
        + key(503) + "\",\"" + key(504) + "\"]}";
    HttpResponse<byte[]> lookup = server.send(HttpRequest.newBuilder(
            server.uri("/v1/namespaces/default/lookup"))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json)));
    assertThat(lookup.statusCode()).isEqualTo(200);
    // the three blocks just put are in RAM, which timed its puts
    assertThat(body(lookup)).matches(
        "\\{\"present\":3,\"tiers\":\\[\\{\"tier\":\"ram\",\"blocks\":3,\"load_us\":[0-9]+}],"
            + "\"load_us\":[0-9]+}");
  }

  @Test
  void badInputGetsItsStatusAndAJsonError() throws Exception {
    assertError(server.get("default", "xyz"), 400, "bad-key");
    assertError(server.get("nowhere", key(1)), 404, "unknown-namespace");
    assertError(server.send(HttpRequest.newBuilder(server.uri(TestServer.blockPath("default", key(601))))
        .header("Content-Type", "text/plain")
        .PUT(HttpRequest.BodyPublishers.ofString("x"))), 415, "unsupported-media-type");
    assertError(server.send(HttpRequest.newBuilder(server.uri("/v1/namespaces/default/lookup"))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"keys\":"))), 400, "invalid-json");
    assertError(server.send(HttpRequest.newBuilder(server.uri("/v1/namespaces/default/lookup"))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\"keys\":[\"" + key(1) + "\",\"12\"]}"))),
        400, "bad-key");
  }

  @Test
  void aBodyOverTheLargestBlockIsRefusedAndTheConnectionClosed() throws Exception {
    String answer = RawHttp.exchange(server.server.getURL(),
        "PUT " + TestServer.blockPath("default", key(701)) + " HTTP/1.1\r\nHost: test\r\n"
            + "Content-Type: application/octet-stream\r\n"
            + "Content-Length: " + (TestServer.MAX_BLOCK_BYTES + 1),
        TestServer.MAX_BLOCK_BYTES + 1, false);
    assertThat(answer).startsWith("HTTP/1.1 413 ").contains("\"error\":\"too-large\"");
    assertThat(server.get("default", key(701)).statusCode()).isEqualTo(404);
  }

  @Test
  void aChunkedBodyOverTheLargestBlockIsRefusedWhileItStreams() throws Exception {
    String answer = RawHttp.exchangeChunked(server.server.getURL(),
        "PUT " + TestServer.blockPath("default", key(702)) + " HTTP/1.1\r\nHost: test\r\n"
            + "Content-Type: application/octet-stream",
        (TestServer.MAX_BLOCK_BYTES >> 20) + 1);
    assertThat(answer).startsWith("HTTP/1.1 413 ").contains("\"error\":\"too-large\"");
    assertThat(server.get("default", key(702)).statusCode()).isEqualTo(404);
  }

  @Test
  void aBodyTooSlowToArriveIsA408AndStoresNothing() throws Exception {
    long ramBefore = server.ramBytesUsed();
    long start = System.nanoTime();
    String answer = RawHttp.exchange(server.server.getURL(),
        "PUT " + TestServer.blockPath("default", key(704)) + " HTTP/1.1\r\nHost: test\r\n"
            + "Content-Type: application/octet-stream\r\nContent-Length: 100000",
        1000, false); // then nothing more: the server must not wait for the rest forever
    assertThat(answer).startsWith("HTTP/1.1 408 ").contains("\"error\":\"body-timeout\"");
    assertThat(System.nanoTime() - start).isLessThan(8_000_000_000L);
    assertThat(server.get("default", key(704)).statusCode()).isEqualTo(404);
    server.awaitRamBytesUsed(ramBefore);
  }

  @Test
  void aBodyCutShortStoresNothingAndTheServerKeepsServing() throws Exception {
    long ramBefore = server.ramBytesUsed();
    RawHttp.exchange(server.server.getURL(),
        "PUT " + TestServer.blockPath("default", key(703)) + " HTTP/1.1\r\nHost: test\r\n"
            + "Content-Type: application/octet-stream\r\nContent-Length: 100000",
        40_000, true);
    assertThat(server.get("default", key(703)).statusCode()).isEqualTo(404);
    server.awaitRamBytesUsed(ramBefore);
    byte[] block = random(100_000, 7);
    assertThat(server.put("default", key(703), block).statusCode()).isEqualTo(201);
    assertThat(server.get("default", key(703)).body()).isEqualTo(block);
  }

  static void assertError(HttpResponse<byte[]> response, int status, String code) {
    assertThat(response.statusCode()).as(body(response)).isEqualTo(status);
    assertThat(response.headers().firstValue("Content-Type")).hasValue("application/json");
    assertThat(body(response)).contains("\"error\":\"" + code + "\"");
  }
}
