package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.testkit.TestBytes;
import io.netty.handler.codec.http2.Http2Headers;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The HTTP a client sees at the edges: oversized headers and request lines, HEAD, content types on
 * requests with and without bodies, and lookups without keys or with too many; every error with a
 * status that names it and the JSON body every error has.
 */
class HttpDetailsTest {

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

  private static String blockPath(long n) {
    return TestServer.blockPath("default", BlockApiTest.key(n));
  }

  /** Sends a request over a new HTTP/1.1 connection and reads what comes back until it closes. */
  private static String http1(String request) throws Exception {
    return RawHttp.exchange(server.server.getURL(), request, 0, true);
  }

  @Test
  void headersOfTensOfKibAreServed() throws Exception {
    byte[] block = TestBytes.random(1000, 1);
    HttpResponse<byte[]> put = server.send(HttpRequest.newBuilder(server.uri(blockPath(1)))
        .header("Content-Type", "application/octet-stream")
        .header("X-Filler", "f".repeat(40_000))
        .PUT(HttpRequest.BodyPublishers.ofByteArray(block)));
    assertThat(put.statusCode()).isEqualTo(201);
  }

  @Test
  void headersOverTheLimitGet431WithAJsonBodyOverHttp1() throws Exception {
    String answer = http1("GET " + blockPath(2) + " HTTP/1.1\r\nHost: test\r\nX-Filler: "
        + "f".repeat(100_000));
    assertThat(answer).startsWith("HTTP/1.1 431 ");
    assertThat(answer).containsIgnoringCase("content-type: application/json")
        .contains("\"error\":\"request-header-fields-too-large\"");
  }

  @Test
  void aRequestLineOverTheLimitGets414WithAJsonBody() throws Exception {
    String answer = http1("GET /v1/namespaces/default/blocks/" + "a".repeat(10_000)
        + " HTTP/1.1\r\nHost: test");
    assertThat(answer).startsWith("HTTP/1.0 414 "); // the version was past the limit, unread
    assertThat(answer).containsIgnoringCase("content-type: application/json")
        .contains("\"error\":\"request-uri-too-long\"");
  }

  @Test
  void aKeyOfTenThousandCharactersOverHttp2IsABadKey() throws Exception {
    try (RawHttp2 h2 = handshake()) {
      h2.request(1, "GET", "/v1/namespaces/default/blocks/" + "a".repeat(10_000), true);
      h2.flush();
      Http2Headers answer = h2.nextHeaders(1);
      assertThat(answer).as("an answer on the stream").isNotNull();
      assertThat(answer.status().toString()).isEqualTo("400");
      assertThat(answer.get("content-type").toString()).startsWith("application/json");
    }
  }

  @Test
  void headersOverTheLimitOnOneHttp2StreamEndOnlyThatStream() throws Exception {
    byte[] block = TestBytes.random(1000, 3);
    assertThat(server.put("default", BlockApiTest.key(3), block).statusCode()).isEqualTo(201);
    try (RawHttp2 h2 = handshake()) {
      h2.request(1, "GET", blockPath(3), true, "x-filler", "f".repeat(70_000));
      h2.request(3, "GET", blockPath(3), true);
      h2.flush();
      List<String> statuses = new ArrayList<>();
      boolean reset = false;
      for (RawHttp2.Frame f; statuses.size() < 2 && !reset && (f = h2.next()) != null; ) {
        assertThat(f.type()).as("a frame that ends the connection").isNotEqualTo(RawHttp2.GOAWAY);
        if (f.type() == RawHttp2.HEADERS) {
          statuses.add(f.stream() + ":" + h2.headers(f).status());
        }
      }
      assertThat(statuses).containsExactlyInAnyOrder("1:431", "3:200");
      // and the connection goes on
      h2.request(5, "GET", blockPath(3), true);
      h2.flush();
      assertThat(h2.nextHeaders(5).status().toString()).isEqualTo("200");
    }
  }

  @Test
  void headOverHttp1GivesTheLengthAndKeepsTheConnection() throws Exception {
    byte[] block = TestBytes.random(5000, 4);
    assertThat(server.put("default", BlockApiTest.key(4), block).statusCode()).isEqualTo(201);
    try (Socket socket = new Socket(server.server.getHost(), server.server.getPort())) {
      socket.setSoTimeout(10_000);
      OutputStream out = socket.getOutputStream();
      InputStream in = socket.getInputStream();
      for (int i = 0; i < 2; i++) {
        out.write(("HEAD " + blockPath(4) + " HTTP/1.1\r\nHost: test\r\n\r\n")
            .getBytes(StandardCharsets.US_ASCII));
        out.flush();
        String head = RawHttp.readHead(in);
        assertThat(head).as("HEAD %d on one connection", i).startsWith("HTTP/1.1 200 ")
            .containsIgnoringCase("content-length: 5000")
            .containsIgnoringCase("kvcache-block-length: 5000")
            .doesNotContainIgnoringCase("connection: close");
      }
      // HEAD of a block that is not there: 404, and the connection still goes on
      out.write(("HEAD " + blockPath(5) + " HTTP/1.1\r\nHost: test\r\n\r\n"
          + "GET " + blockPath(4) + " HTTP/1.1\r\nHost: test\r\n\r\n")
          .getBytes(StandardCharsets.US_ASCII));
      out.flush();
      assertThat(RawHttp.readHead(in)).startsWith("HTTP/1.1 404 ");
      String get = RawHttp.readHead(in);
      assertThat(get).startsWith("HTTP/1.1 200 ");
      assertThat(in.readNBytes(5000)).isEqualTo(block);
    }
  }

  @Test
  void aPutWithoutContentTypeIs415AndADeleteWithOneIsServed() throws Exception {
    HttpResponse<byte[]> put = server.send(HttpRequest.newBuilder(server.uri(blockPath(6)))
        .PUT(HttpRequest.BodyPublishers.ofByteArray(new byte[100])));
    assertThat(put.statusCode()).isEqualTo(415);
    assertThat(new String(put.body(), StandardCharsets.UTF_8))
        .contains("\"error\":\"unsupported-media-type\"");
    assertThat(server.get("default", BlockApiTest.key(6)).statusCode()).isEqualTo(404);

    assertThat(server.put("default", BlockApiTest.key(6), new byte[100]).statusCode()).isEqualTo(201);
    HttpResponse<byte[]> delete = server.send(HttpRequest.newBuilder(server.uri(blockPath(6)))
        .header("Content-Type", "application/octet-stream").DELETE());
    assertThat(delete.statusCode()).isEqualTo(204);
    assertThat(server.get("default", BlockApiTest.key(6)).statusCode()).isEqualTo(404);
  }

  @Test
  void aLookupWithNoKeysOrTooManyIsABadLookup() throws Exception {
    for (String body : new String[] {"{\"keys\": []}", "{\"keys\": [" + tooMany() + "]}"}) {
      HttpResponse<byte[]> r = server.send(HttpRequest.newBuilder(
              server.uri("/v1/namespaces/default/lookup"))
          .header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(body)));
      String answer = new String(r.body(), StandardCharsets.UTF_8);
      assertThat(r.statusCode()).as(answer).isEqualTo(400);
      assertThat(answer).contains("\"error\":\"bad-lookup\"").doesNotContain("Jackson", "Serde");
    }
  }

  /** 4097 keys, one over the limit of a lookup, as JSON strings separated by commas. */
  private static String tooMany() {
    List<String> keys = new ArrayList<>();
    for (int i = 0; i <= 4096; i++) {
      keys.add('"' + BlockApiTest.key(i) + '"');
    }
    return String.join(",", keys);
  }

  private static RawHttp2 handshake() throws Exception {
    RawHttp2 h2 = new RawHttp2(server.server.getHost(), server.server.getPort());
    for (RawHttp2.Frame f; (f = h2.next()) != null; ) {
      if (f.type() == RawHttp2.SETTINGS && (f.flags() & 1) == 0) {
        return h2; // the server's SETTINGS, acknowledged: its frame limit (1 MiB) holds
      }
    }
    throw new AssertionError("no SETTINGS from the server");
  }
}
