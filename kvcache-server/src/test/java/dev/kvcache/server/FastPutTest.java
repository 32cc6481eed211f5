package dev.kvcache.server;

import static dev.kvcache.server.BlockApiTest.assertError;
import static dev.kvcache.server.BlockApiTest.key;
import static dev.kvcache.testkit.TestBytes.random;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.server.http.FastPut;
import io.netty.handler.codec.http2.Http2Headers;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * HTTP/2 PUTs stored from the frames, ahead of Micronaut: the controller's answers, and bodies that
 * lie about their length, stall or are reset store nothing and free their room.
 */
class FastPutTest {

  static final String WRITER = "w".repeat(40);
  static final String READER = "r".repeat(40);

  @TempDir Path dir;

  static long answered(TestServer server) {
    return server.context.getBean(FastPut.class).answered();
  }

  static HttpResponse<byte[]> put(HttpClient h2, TestServer server, String key, byte[] body,
      String token) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(server.uri(TestServer.blockPath("default", key)))
        .header("Content-Type", "application/octet-stream")
        .timeout(java.time.Duration.ofSeconds(10))
        .PUT(HttpRequest.BodyPublishers.ofByteArray(body));
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    HttpResponse<byte[]> r = h2.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
    assertThat(r.version()).isEqualTo(HttpClient.Version.HTTP_2);
    return r;
  }

  /** A raw connection whose first request (which Micronaut answers) is done. */
  static RawHttp2 connect(TestServer server) throws Exception {
    RawHttp2 h2 = new RawHttp2(server.server.getHost(), server.server.getPort());
    h2.request(1, "GET", "/health", true);
    h2.flush();
    assertThat(h2.nextHeaders(1).status().toString()).isEqualTo("200");
    return h2;
  }

  /** Whether both streams were reset by the server (other frames are skipped, headers decoded). */
  static boolean resets(RawHttp2 h2, int first, int second) throws Exception {
    boolean a = false;
    boolean b = false;
    for (RawHttp2.Frame f; !(a && b) && (f = h2.next()) != null; ) {
      if (f.type() == RawHttp2.HEADERS) {
        h2.headers(f);
      } else if (f.type() == RawHttp2.RST_STREAM) {
        a |= f.stream() == first;
        b |= f.stream() == second;
      }
    }
    return a && b;
  }

  @Test
  void blocksOfEverySizeAreStoredWithTheControllersAnswer() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      HttpClient h2 = FastGetTest.h2(server);
      int n = 0;
      for (int length : new int[] {1, 300 << 10, (3 << 20) + 5}) {
        byte[] block = random(length, length);
        HttpResponse<byte[]> r = put(h2, server, key(length), block, null);
        assertThat(r.statusCode()).isEqualTo(201);
        assertThat(r.headers().firstValue("kvcache-put")).hasValue("stored");
        assertThat(answered(server)).isEqualTo(++n);
        assertThat(server.get("default", key(length)).body()).isEqualTo(block);
      }
      byte[] again = random(1000, 9);
      assertThat(put(h2, server, key(1), again, null).statusCode()).isEqualTo(201);
      assertThat(server.get("default", key(1)).body()).as("replaced").isEqualTo(again);
    }
  }

  @Test
  void aBodyLongerOrShorterThanItsLengthIsResetAndStoresNothing() throws Exception {
    try (TestServer server = TestServer.start(dir); RawHttp2 h2 = connect(server)) {
      long used = server.ramBytesUsed();
      // Netty's HTTP/2 decoder checks DATA against content-length and resets the stream
      h2.request(3, "PUT", TestServer.blockPath("default", key(1)), false, "content-length", "10");
      h2.data(3, new byte[20], true);
      h2.request(5, "PUT", TestServer.blockPath("default", key(2)), false, "content-length", "100");
      h2.data(5, new byte[50], true);
      h2.flush();
      assertThat(resets(h2, 3, 5)).isTrue();

      assertThat(answered(server)).isZero();
      assertError(server.get("default", key(1)), 404, "not-cached");
      assertError(server.get("default", key(2)), 404, "not-cached");
      server.awaitRamBytesUsed(used);
    }
  }

  @Test
  void aBodyResetOrTooSlowFreesItsRoom() throws Exception {
    try (TestServer server = TestServer.start(dir, Map.of("kvcache.body-timeout", "300ms"));
        RawHttp2 h2 = connect(server)) {
      long used = server.ramBytesUsed();
      h2.request(3, "PUT", TestServer.blockPath("default", key(1)), false,
          "content-length", Integer.toString(1 << 20));
      h2.data(3, new byte[10_000], false);
      h2.reset(3);
      h2.flush();
      h2.request(5, "PUT", TestServer.blockPath("default", key(2)), false,
          "content-length", Integer.toString(1 << 20));
      h2.data(5, new byte[10_000], false);
      h2.flush();
      Http2Headers slow = h2.nextHeaders(5);
      assertThat(slow.status().toString()).isEqualTo("408");
      RawHttp2.Frame reset = h2.nextReset(5);
      assertThat(reset).as("RST_STREAM after the 408").isNotNull();
      assertThat(reset.errorCode()).as("NO_ERROR").isZero();

      assertError(server.get("default", key(1)), 404, "not-cached");
      assertError(server.get("default", key(2)), 404, "not-cached");
      server.awaitRamBytesUsed(used);
    }
  }

  @Test
  void whatTheFastPathDoesNotTakeMicronautStores() throws Exception {
    try (TestServer server = TestServer.start(dir, Map.of(
        "kvcache.auth.tokens.writer.secret", WRITER,
        "kvcache.auth.tokens.writer.read", "default",
        "kvcache.auth.tokens.writer.write", "default",
        "kvcache.auth.tokens.reader.secret", READER,
        "kvcache.auth.tokens.reader.read", "default"))) {
      HttpClient h2 = FastGetTest.h2(server);
      byte[] block = random(5000, 1);
      assertError(put(h2, server, key(1), block, null), 401, "unauthorized");
      assertError(put(h2, server, key(1), block, READER), 403, "forbidden");
      assertError(put(h2, server, "xyz", block, WRITER), 400, "bad-key");
      assertThat(answered(server)).isZero();
      assertThat(put(h2, server, key(1), block, WRITER).statusCode()).isEqualTo(201);
      assertThat(answered(server)).isEqualTo(1);
      assertThat(server.send(HttpRequest.newBuilder(
              server.uri(TestServer.blockPath("default", key(1))))
          .header("Authorization", "Bearer " + READER)).body()).isEqualTo(block);
    }
  }

  @Test
  void offItLeavesEveryPutToMicronaut() throws Exception {
    try (TestServer server = TestServer.start(dir, Map.of("kvcache.fast-put", false))) {
      HttpClient h2 = FastGetTest.h2(server);
      byte[] block = random(3000, 5);
      assertThat(put(h2, server, key(5), block, null).statusCode()).isEqualTo(201);
      assertThat(answered(server)).isZero();
      assertThat(Arrays.equals(server.get("default", key(5)).body(), block)).isTrue();
    }
  }
}
