package dev.kvcache.server;

import static dev.kvcache.server.BatchGetTest.awaitNoLeases;
import static dev.kvcache.server.BlockApiTest.assertError;
import static dev.kvcache.server.BlockApiTest.key;
import static dev.kvcache.testkit.TestBytes.halfFloats;
import static dev.kvcache.testkit.TestBytes.random;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.codec.BlockCodec;
import dev.kvcache.codec.Filter;
import dev.kvcache.wire.Wire;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Blocks sent and answered as codec containers ({@code Content-Encoding: kvcache-lz4}). */
class WireCodecTest {

  private static final BlockCodec CODEC =
      BlockCodec.builder().filter(Filter.BYTE_SHUFFLE_2).chunkSizeBytes(64 << 10).build();

  @TempDir Path dir;

  static byte[] encode(byte[] block) {
    ByteBuffer out = ByteBuffer.allocate((int) CODEC.maxEncodedLength(block.length));
    CODEC.encode(ByteBuffer.wrap(block), out);
    return Arrays.copyOf(out.array(), out.position());
  }

  static byte[] decode(byte[] container) throws Exception {
    ByteBuffer src = ByteBuffer.wrap(container);
    ByteBuffer dst = ByteBuffer.allocate((int) BlockCodec.decodedLength(src));
    BlockCodec.decode(src, dst);
    return dst.array();
  }

  static HttpResponse<byte[]> putEncoded(TestServer server, String key, byte[] body, String coding)
      throws Exception {
    return server.send(HttpRequest.newBuilder(server.uri(TestServer.blockPath("default", key)))
        .header("Content-Type", "application/octet-stream")
        .header("Content-Encoding", coding)
        .PUT(HttpRequest.BodyPublishers.ofByteArray(body)));
  }

  static HttpResponse<byte[]> getAccepting(TestServer server, String key, String accept)
      throws Exception {
    return server.send(HttpRequest.newBuilder(server.uri(TestServer.blockPath("default", key)))
        .header("Accept-Encoding", accept)
        .GET());
  }

  @Test
  void anEncodedPutIsStoredDecodedAndAnsweredAsItIsByDefault() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      byte[] block = halfFloats((3 << 20) + 5, 1);
      byte[] container = encode(block);
      assertThat(container.length).as("the test data compresses").isLessThan(block.length * 9 / 10);

      assertThat(putEncoded(server, key(1), container, "kvcache-lz4").statusCode()).isEqualTo(201);
      assertThat(server.wireContainers("received")).isEqualTo(1);
      HttpResponse<byte[]> plain = server.get("default", key(1));
      assertThat(plain.statusCode()).isEqualTo(200);
      assertThat(plain.body()).isEqualTo(block);

      HttpResponse<byte[]> asked = getAccepting(server, key(1), "kvcache-lz4");
      assertThat(asked.headers().firstValue("Content-Encoding"))
          .as("a server with kvcache.wire-codec none answers blocks as they are").isEmpty();
      assertThat(asked.body()).isEqualTo(block);
      assertThat(server.wireContainers("sent")).isZero();
      awaitNoLeases(server);
    }
  }

  @Test
  void aServerWithTheWireCodecEncodesForClientsThatAcceptIt() throws Exception {
    Map<String, Object> lz4 =
        Map.of("kvcache.wire-codec", "lz4", "kvcache.wire-codec-filter", "byte_shuffle_2");
    try (TestServer server = TestServer.start(dir, lz4)) {
      byte[] block = halfFloats(2 << 20, 2);
      assertThat(server.put("default", key(2), block).statusCode()).isEqualTo(201);

      HttpResponse<byte[]> encoded = getAccepting(server, key(2), "gzip, kvcache-lz4");
      assertThat(encoded.statusCode()).isEqualTo(200);
      assertThat(encoded.headers().firstValue("Content-Encoding")).hasValue("kvcache-lz4");
      assertThat(encoded.headers().firstValue("Vary")).hasValue("Accept-Encoding");
      assertThat(encoded.headers().firstValue(Wire.BLOCK_LENGTH))
          .hasValue(Integer.toString(block.length));
      assertThat(encoded.body().length).isLessThan(block.length * 9 / 10);
      assertThat(decode(encoded.body())).isEqualTo(block);
      assertThat(server.wireContainers("sent")).isEqualTo(1);

      for (String accept : new String[] {"gzip", "kvcache-lz4;q=0", "identity"}) {
        HttpResponse<byte[]> plain = getAccepting(server, key(2), accept);
        assertThat(plain.headers().firstValue("Content-Encoding")).as(accept).isEmpty();
        assertThat(plain.body()).as(accept).isEqualTo(block);
      }
      for (int i = 0; i < 5; i++) { // answers given up after their first bytes hold no lease
        HttpResponse<java.io.InputStream> cut = server.http.send(HttpRequest.newBuilder(
                server.uri(TestServer.blockPath("default", key(2))))
            .header("Accept-Encoding", "kvcache-lz4").GET().build(),
            HttpResponse.BodyHandlers.ofInputStream());
        try (java.io.InputStream in = cut.body()) {
          assertThat(in.readNBytes(10)).hasSize(10);
        }
      }
      HttpResponse<byte[]> head = server.send(HttpRequest.newBuilder(
              server.uri(TestServer.blockPath("default", key(2))))
          .header("Accept-Encoding", "kvcache-lz4")
          .method("HEAD", HttpRequest.BodyPublishers.noBody()));
      assertThat(head.statusCode()).isEqualTo(200);
      assertThat(head.headers().firstValue(Wire.BLOCK_LENGTH))
          .hasValue(Integer.toString(block.length));
      awaitNoLeases(server);
    }
  }

  @Test
  void aDamagedTooLargeOrUnknownEncodingIsRefusedAndLosesNothing() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      byte[] kept = random(100_000, 3);
      assertThat(server.put("default", key(3), kept).statusCode()).isEqualTo(201);
      long used = server.ramBytesUsed();

      byte[] damaged = encode(halfFloats(1 << 20, 4));
      damaged[damaged.length - 1000] ^= 0x10;
      assertError(putEncoded(server, key(4), damaged, "kvcache-lz4"), 400, "corrupt-body");
      byte[] cut = Arrays.copyOf(encode(halfFloats(1 << 20, 4)), 1000);
      assertError(putEncoded(server, key(4), cut, "kvcache-lz4"), 400, "corrupt-body");
      assertError(putEncoded(server, key(4), new byte[10], "kvcache-lz4"), 400, "corrupt-body");
      byte[] whole = encode(halfFloats(1 << 20, 4));
      byte[] trailing = Arrays.copyOf(whole, whole.length + 1);
      assertError(putEncoded(server, key(4), trailing, "kvcache-lz4"), 400, "corrupt-body");
      byte[] tooLarge = encode(new byte[TestServer.MAX_BLOCK_BYTES + 1]);
      assertError(putEncoded(server, key(4), tooLarge, "kvcache-lz4"), 413, "too-large");
      assertError(putEncoded(server, key(4), kept, "compress"), 415, "unsupported-encoding");

      HttpResponse<byte[]> after = server.get("default", key(3));
      assertThat(after.body()).as("the block stored before").isEqualTo(kept);
      assertThat(server.wireContainers("received")).isZero();
      assertError(server.get("default", key(4)), 404, "not-cached");
      awaitNoLeases(server);
      server.awaitRamBytesUsed(used);
    }
  }

  @Test
  void aGzipBodyIsStoredDecompressed() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      byte[] block = halfFloats(1 << 20, 5);
      java.io.ByteArrayOutputStream gz = new java.io.ByteArrayOutputStream();
      try (java.util.zip.GZIPOutputStream out = new java.util.zip.GZIPOutputStream(gz)) {
        out.write(block);
      }
      assertThat(putEncoded(server, key(5), gz.toByteArray(), "gzip").statusCode()).isEqualTo(201);
      assertThat(server.get("default", key(5)).body()).isEqualTo(block);
    }
  }

  @Test
  void anUnknownWireCodecStopsTheServerFromStarting() {
    assertThatThrownBy(() -> TestServer.start(dir, Map.of("kvcache.wire-codec", "zstd")))
        .hasStackTraceContaining("kvcache.wire-codec must be none or lz4, got 'zstd'");
    assertThatThrownBy(() -> TestServer.start(dir, Map.of("kvcache.wire-codec-filter", "byte_shuffle_2")))
        .hasStackTraceContaining("kvcache.wire-codec is none");
  }
}
