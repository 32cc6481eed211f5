package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.spi.Crc32c;
import dev.kvcache.testkit.TestBytes;
import dev.kvcache.wire.Wire;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A block's CRC32C travels with it ({@code x-amz-checksum-crc32c}): a PUT whose bytes do not have
 * the checksum it sent is refused and stores nothing, over HTTP/1.1 and HTTP/2 alike; a GET or HEAD
 * answers with the checksum the block was stored with, from RAM and from disk after a restart.
 */
class ChecksumTest {

  @TempDir Path dir;

  private static HttpResponse<byte[]> put(HttpClient client, TestServer server, long n, byte[] block,
      String checksum) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(server.uri(TestServer.blockPath("default",
            BlockApiTest.key(n))))
        .header("Content-Type", "application/octet-stream")
        .timeout(Duration.ofSeconds(30))
        .PUT(HttpRequest.BodyPublishers.ofByteArray(block));
    if (checksum != null) {
      b.header(Wire.CHECKSUM, checksum);
    }
    return client.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
  }

  private static HttpResponse<byte[]> get(HttpClient client, TestServer server, long n, String method)
      throws Exception {
    return client.send(HttpRequest.newBuilder(server.uri(TestServer.blockPath("default",
            BlockApiTest.key(n)))).method(method, HttpRequest.BodyPublishers.noBody())
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofByteArray());
  }

  @Test
  void aPutWhoseBytesDoNotHaveItsChecksumIsRefusedOverBothProtocols() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      HttpClient h2 = HttpClient.newBuilder().version(HttpClient.Version.HTTP_2).build();
      h2.send(HttpRequest.newBuilder(server.uri("/health")).build(),
          HttpResponse.BodyHandlers.discarding()); // HTTP/2 by upgrade: the next PUTs take the fast path
      long n = 0;
      for (HttpClient client : new HttpClient[] {server.http, h2}) {
        byte[] block = TestBytes.random(300_000, n);
        String right = Wire.checksum(Crc32c.of(ByteBuffer.wrap(block)));
        String wrong = Wire.checksum(Crc32c.of(ByteBuffer.wrap(block)) ^ 1);

        HttpResponse<byte[]> refused = put(client, server, n, block, wrong);
        assertThat(refused.statusCode()).as(client.version().toString()).isEqualTo(400);
        assertThat(new String(refused.body(), StandardCharsets.UTF_8))
            .contains("\"error\":\"checksum-mismatch\"");
        assertThat(get(client, server, n, "GET").statusCode()).isEqualTo(404);

        assertThat(put(client, server, n, block, "not base64!").statusCode()).isEqualTo(400);
        assertThat(get(client, server, n, "GET").statusCode()).isEqualTo(404);

        assertThat(put(client, server, n, block, right).statusCode()).isEqualTo(201);
        HttpResponse<byte[]> got = get(client, server, n, "GET");
        assertThat(got.body()).isEqualTo(block);
        assertThat(got.headers().firstValue(Wire.CHECKSUM)).hasValue(right);
        assertThat(get(client, server, n, "HEAD").headers().firstValue(Wire.CHECKSUM)).hasValue(right);
        n++;
      }
    }
  }

  @Test
  void aBlockWithoutAChecksumGetsOneAndKeepsItOnDisk() throws Exception {
    byte[] block = TestBytes.random(1 << 20, 7);
    String expected = Wire.checksum(Crc32c.of(ByteBuffer.wrap(block)));
    try (TestServer server = TestServer.start(dir)) {
      assertThat(put(server.http, server, 7, block, null).statusCode()).isEqualTo(201);
      assertThat(get(server.http, server, 7, "GET").headers().firstValue(Wire.CHECKSUM))
          .hasValue(expected);
    }
    try (TestServer again = TestServer.start(dir)) { // RAM starts empty: from the disk tier
      HttpResponse<byte[]> got = get(again.http, again, 7, "GET");
      assertThat(got.body()).isEqualTo(block);
      assertThat(got.headers().firstValue(Wire.CHECKSUM)).hasValue(expected);
    }
  }

  @Test
  void blocksStoredLz4CodedOnDiskComeBackWithTheirOwnChecksumFromEveryRead() throws Exception {
    Map<String, Object> coded = Map.of("kvcache.cache.disk-codec", "lz4");
    byte[] block = new byte[1 << 20]; // compressible: stored coded
    for (int i = 0; i < block.length; i++) {
      block[i] = (byte) (i % 251 < 200 ? 0 : i);
    }
    String expected = Wire.checksum(Crc32c.of(ByteBuffer.wrap(block)));
    try (TestServer server = TestServer.start(dir, coded)) {
      assertThat(put(server.http, server, 8, block, null).statusCode()).isEqualTo(201);
    }
    try (TestServer again = TestServer.start(dir, coded)) { // RAM starts empty: from the disk tier
      HttpResponse<byte[]> got = get(again.http, again, 8, "GET");
      assertThat(got.body()).isEqualTo(block);
      assertThat(got.headers().firstValue(Wire.CHECKSUM)).hasValue(expected);
    }
    try (TestServer third = TestServer.start(dir, coded)) { // and through a batch
      HttpResponse<byte[]> batch = BatchGetTest.batchGet(third, "default",
          BatchGetTest.keysJson(BlockApiTest.key(8)));
      assertThat(batch.body()).isEqualTo(block);
      assertThat(batch.headers().firstValue(Wire.BLOCK_CHECKSUMS))
          .hasValue(expected);
    }
  }
}
