package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.testkit.Tmpfs;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The server on a small file system of its own: a 256 MiB tmpfs, mounted for the test (which needs
 * root), with a 128 MiB disk tier. It starts there with the default free-space floor; a start on
 * that file system once another file has filled it deletes nothing, serves what is stored, reports
 * itself degraded and refuses write-through PUTs with 507 until space is back.
 */
class FullDiskServerTest {

  private static final int BLOCK = 1 << 20;

  @RegisterExtension final Tmpfs small = new Tmpfs("256m");

  private TestServer start() {
    return TestServer.start(small.path().resolve("data"), Map.of(
        "kvcache.cache.disk-capacity", "128MiB",
        "kvcache.cache.durability", "write_through"));
  }

  private static String health(TestServer server) throws Exception {
    return new String(server.send(HttpRequest.newBuilder(server.uri("/health"))).body());
  }

  private static String metrics(TestServer server) throws Exception {
    return new String(server.send(HttpRequest.newBuilder(server.uri("/prometheus"))).body());
  }

  @Test
  void aStartWithoutRoomDeletesNothingAndRecoversWhenSpaceReturns() throws Exception {
    byte[][] blocks = new byte[40][];
    Random random = new Random(3);
    try (TestServer server = start()) {
      assertThat(health(server)).contains("\"status\":\"UP\"");
      for (int i = 0; i < blocks.length; i++) {
        blocks[i] = new byte[BLOCK];
        random.nextBytes(blocks[i]);
        assertThat(server.put("default", BlockApiTest.key(i), blocks[i]).statusCode()).isEqualTo(201);
      }
    }
    Path filler = small.path().resolve("filler");
    Tmpfs.fill(filler); // far below the floor (5% of 256 MiB), and no room in the last super-block
    assertThat(Files.getFileStore(filler).getUsableSpace()).as("free after filling").isLessThan(64 << 10);

    try (TestServer server = start()) {
      for (int i = 0; i < blocks.length; i++) {
        assertThat(server.get("default", BlockApiTest.key(i)).body()).as("block %d", i)
            .isEqualTo(blocks[i]);
      }
      String degraded = health(server);
      assertThat(degraded).contains("\"status\":\"DEGRADED\"").contains("disk");
      assertThat(metrics(server)).contains("kvcache_degraded 1.0");
      byte[] more = new byte[BLOCK];
      var refused = server.put("default", BlockApiTest.key(100), more);
      assertThat(refused.statusCode()).isEqualTo(507);
      assertThat(new String(refused.body())).contains("\"error\":\"no-space\"");
      assertThat(server.get("default", BlockApiTest.key(100)).statusCode()).isEqualTo(404);

      Files.delete(filler);
      assertThat(server.put("default", BlockApiTest.key(100), more).statusCode()).isEqualTo(201);
      assertThat(health(server)).as("once space is back").contains("\"status\":\"UP\"");
      assertThat(metrics(server)).contains("kvcache_degraded 0.0");
      assertThat(metrics(server)).containsPattern("kvcache_lower_write_failures_total [1-9]");
    }
  }
}
