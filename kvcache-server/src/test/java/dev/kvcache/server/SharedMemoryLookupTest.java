package dev.kvcache.server;

import static dev.kvcache.server.BlockApiTest.body;
import static dev.kvcache.server.BlockApiTest.key;
import static dev.kvcache.testkit.TestBytes.random;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.spi.Crc32c;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A pinned lookup from this host, on a server whose RAM is in shared memory, answers where each
 * pinned block lies there: a client that maps the file reads the block it put.
 */
class SharedMemoryLookupTest {

  @TempDir Path dir;
  @TempDir Path shm;

  private static HttpResponse<byte[]> lookup(TestServer server, String json) throws Exception {
    return server.send(HttpRequest.newBuilder(server.uri("/v1/namespaces/default/lookup"))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json)));
  }

  /** A slice of the answer's {@code shared_memory} list: file, offset, length, CRC32C. */
  private record Slice(Path file, long offset, int length, int crc32c) {}

  private static List<Slice> slices(String answer) {
    Matcher m = Pattern.compile("\\{\"file\":\"([^\"]+)\",\"offset\":(\\d+),\"length\":(\\d+),"
        + "\"crc32c\":(\\d+)\\}").matcher(answer);
    List<Slice> slices = new ArrayList<>();
    while (m.find()) {
      slices.add(new Slice(Path.of(m.group(1)), Long.parseLong(m.group(2)),
          Integer.parseInt(m.group(3)), (int) Long.parseLong(m.group(4))));
    }
    return slices;
  }

  private static byte[] read(Slice slice) throws Exception {
    try (FileChannel ch = FileChannel.open(slice.file(), StandardOpenOption.READ)) {
      ByteBuffer mapped = ch.map(FileChannel.MapMode.READ_ONLY, slice.offset(), slice.length());
      byte[] bytes = new byte[mapped.remaining()];
      mapped.get(bytes);
      return bytes;
    }
  }

  @Test
  void aPinnedLookupAnswersWhereEachBlockLiesInSharedMemory() throws Exception {
    try (TestServer server = TestServer.start(dir,
        Map.of("kvcache.cache.ram-shared-memory-dir", shm.toString()))) {
      assertThat(Files.list(shm).count()).as("RAM's files").isPositive();
      byte[][] blocks = {random(3000, 1), random(70_000, 2)};
      server.put("default", key(1), blocks[0]);
      server.put("default", key(2), blocks[1]);
      String keys = "\"keys\":[\"" + key(1) + "\",\"" + key(2) + "\"]";

      HttpResponse<byte[]> found = lookup(server, "{" + keys + ",\"pin_ms\":10000,"
          + "\"shared_memory\":true}");
      assertThat(found.statusCode()).isEqualTo(200);
      assertThat(body(found)).contains("\"shared_memory\":[{");
      List<Slice> slices = slices(body(found));
      assertThat(slices).as(body(found)).hasSize(2);
      for (int i = 0; i < 2; i++) {
        assertThat(slices.get(i).file()).startsWith(shm);
        assertThat(read(slices.get(i))).isEqualTo(blocks[i]);
        assertThat(slices.get(i).crc32c()).as("the CRC32C to check a copy against")
            .isEqualTo(Crc32c.of(ByteBuffer.wrap(blocks[i])));
      }

      assertThat(body(lookup(server, "{" + keys + ",\"pin_ms\":10000}")))
          .as("not asked for").doesNotContain("shared_memory");
      assertThat(body(lookup(server, "{" + keys + ",\"shared_memory\":true}")))
          .as("no pin, nothing holds the blocks in place").doesNotContain("shared_memory");
    }
  }

  @Test
  void aServerWithPrivateRamAnswersNoSharedMemory() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      server.put("default", key(1), random(3000, 1));
      HttpResponse<byte[]> found = lookup(server, "{\"keys\":[\"" + key(1) + "\"],"
          + "\"pin_ms\":10000,\"shared_memory\":true}");
      assertThat(body(found)).contains("\"present\":1").doesNotContain("shared_memory");
    }
  }
}
