package dev.kvcache.server;

import static dev.kvcache.server.BlockApiTest.assertError;
import static dev.kvcache.server.BlockApiTest.key;
import static dev.kvcache.testkit.TestBytes.random;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.KvCache;
import dev.kvcache.server.api.BatchGetController;
import dev.kvcache.spi.Crc32c;
import dev.kvcache.wire.Wire;
import java.io.ByteArrayOutputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Many blocks in one answer: lengths in a header, blocks back to back in the body. */
class BatchGetTest {

  @TempDir Path dir;

  static HttpResponse<byte[]> batchGet(TestServer server, String namespace, String json)
      throws Exception {
    return server.send(HttpRequest.newBuilder(
            server.uri("/v1/namespaces/" + namespace + "/batch-get"))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json)));
  }

  static String keysJson(String... keys) {
    return Arrays.stream(keys).map(k -> "\"" + k + "\"")
        .collect(Collectors.joining(",", "{\"keys\":[", "]}"));
  }

  static String lengths(HttpResponse<byte[]> answer) {
    return answer.headers().firstValue(Wire.BLOCK_LENGTHS).orElseThrow();
  }

  /** Leases the server holds open; the last ones close just after the answer's last byte. */
  static void awaitNoLeases(TestServer server) throws InterruptedException {
    KvCache cache = server.context.getBean(KvCache.class);
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (cache.stats().leasesOpen() != 0 && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertThat(cache.stats().leasesOpen()).as("leases open").isZero();
  }

  @Test
  void theBlocksFoundComeBackToBackWithEachKeysLengthAndZeroForAMiss() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      byte[][] blocks = {random(1000, 1), random(300 << 10, 2), random(3 << 20, 3)};
      for (int i = 0; i < blocks.length; i++) {
        assertThat(server.put("default", key(i), blocks[i]).statusCode()).isEqualTo(201);
      }
      HttpResponse<byte[]> answer =
          batchGet(server, "default", keysJson(key(0), key(99), key(1), key(2), key(0)));
      assertThat(answer.statusCode()).isEqualTo(200);
      assertThat(lengths(answer)).isEqualTo("1000,0,307200,3145728,1000");
      assertThat(answer.headers().firstValue(Wire.BLOCK_CHECKSUMS))
          .as("one CRC32C per block in the body, in order")
          .hasValue(Stream.of(blocks[0], blocks[1], blocks[2], blocks[0])
              .map(b -> Wire.checksum(Crc32c.of(ByteBuffer.wrap(b))))
              .collect(Collectors.joining(",")));
      ByteArrayOutputStream expected = new ByteArrayOutputStream();
      for (byte[] b : new byte[][] {blocks[0], blocks[1], blocks[2], blocks[0]}) {
        expected.writeBytes(b);
      }
      assertThat(answer.body()).isEqualTo(expected.toByteArray());
      awaitNoLeases(server);

      HttpResponse<byte[]> none = batchGet(server, "default", keysJson(key(98), key(99)));
      assertThat(none.statusCode()).isEqualTo(200);
      assertThat(lengths(none)).isEqualTo("0,0");
      assertThat(none.headers().firstValue(Wire.BLOCK_CHECKSUMS).orElse(""))
          .as("no block, no checksum").isEmpty();
      assertThat(none.body()).isEmpty();
    }
  }

  @Test
  void blocksBeyondTheBatchLimitAreLeftForTheNextBatchButOneIsAlwaysAnswered() throws Exception {
    try (TestServer server = TestServer.start(dir, Map.of("kvcache.max-batch-bytes", 1 << 20))) {
      for (int i = 0; i < 3; i++) {
        server.put("default", key(i), random(600 << 10, i));
      }
      server.put("default", key(9), random(2 << 20, 9));
      HttpResponse<byte[]> cut = batchGet(server, "default", keysJson(key(7), key(0), key(1), key(2)));
      assertThat(lengths(cut)).isEqualTo("0,614400");
      assertThat(cut.body()).isEqualTo(random(600 << 10, 0));

      HttpResponse<byte[]> large = batchGet(server, "default", keysJson(key(9), key(0)));
      assertThat(lengths(large)).as("a block over the limit on its own").isEqualTo("2097152");
      assertThat(large.body()).isEqualTo(random(2 << 20, 9));
      awaitNoLeases(server);
    }
  }

  @Test
  void badBatchesGetTheirErrorsAndLeaseNothing() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      server.put("default", key(1), random(1000, 1));
      assertError(batchGet(server, "default", "{}"), 400, "bad-batch");
      assertError(batchGet(server, "default", "{\"keys\":[]}"), 400, "bad-batch");
      List<String> tooMany = new ArrayList<>();
      IntStream.range(0, BatchGetController.MAX_KEYS + 1).forEach(i -> tooMany.add(key(i)));
      assertError(batchGet(server, "default", keysJson(tooMany.toArray(String[]::new))), 400,
          "bad-batch");
      assertError(batchGet(server, "default", keysJson(key(1), "xyz")), 400, "bad-key");
      assertError(batchGet(server, "nowhere", keysJson(key(1))), 404, "unknown-namespace");
      assertError(batchGet(server, "default", "not json"), 400, "invalid-json");
      awaitNoLeases(server);
      assertThat(server.get("default", key(1)).body()).isEqualTo(random(1000, 1));
    }
  }
}
