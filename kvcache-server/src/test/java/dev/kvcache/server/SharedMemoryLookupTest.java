package dev.kvcache.server;

import static dev.kvcache.server.BlockApiTest.body;
import static dev.kvcache.server.BlockApiTest.key;
import static dev.kvcache.testkit.TestBytes.random;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.spi.Crc32c;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
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

  /**
   * The answer, head and body, to a request sent over HTTP/1.1 from local address {@code from}
   * (another loopback address reaches the server as loopback does).
   */
  private static String fromAddress(TestServer server, String from, String method, String path,
      String json) throws Exception {
    try (Socket socket = new Socket()) {
      socket.bind(new InetSocketAddress(InetAddress.getByName(from), 0));
      socket.connect(new InetSocketAddress("127.0.0.1", server.uri("/").getPort()), 5000);
      socket.setSoTimeout(10_000);
      byte[] body = json.getBytes(StandardCharsets.UTF_8);
      socket.getOutputStream().write((method + " " + path + " HTTP/1.1\r\nHost: localhost\r\n"
          + "Content-Type: application/json\r\nContent-Length: " + body.length
          + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      socket.getOutputStream().write(body);
      return new String(socket.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
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

      // a peer on another loopback address, as a sidecar proxy connects on behalf of remote
      // clients, is no client on this host: it gets no shared memory, and may copy nothing
      String fromProxy = fromAddress(server, "127.0.0.6", "POST", "/v1/namespaces/default/lookup",
          "{" + keys + ",\"pin_ms\":10000,\"shared_memory\":true}");
      assertThat(fromProxy).startsWith("HTTP/1.1 200").contains("\"present\":2")
          .doesNotContain("shared_memory").doesNotContain("copy_token");
      Matcher lease = Pattern.compile("\"lease\":\"([0-9a-f]{32})\"").matcher(body(found));
      assertThat(lease.find()).isTrue();
      assertThat(fromAddress(server, "127.0.0.6", "POST",
          "/v1/namespaces/default/leases/" + lease.group(1) + "/copy-into",
          "{\"file\":\"" + shm.resolve("x") + "\",\"token\":\"00\",\"blocks\":[[0,0]]}"))
          .startsWith("HTTP/1.1 403").contains("not-this-host");

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
