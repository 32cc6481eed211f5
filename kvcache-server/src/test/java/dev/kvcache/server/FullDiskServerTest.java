package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.testkit.Tmpfs;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
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
      assertThat(server.metrics()).contains("kvcache_degraded 1.0");
      byte[] more = new byte[BLOCK];
      var refused = server.put("default", BlockApiTest.key(100), more);
      assertThat(refused.statusCode()).isEqualTo(507);
      assertThat(new String(refused.body())).contains("\"error\":\"no-space\"");
      assertThat(server.get("default", BlockApiTest.key(100)).statusCode()).isEqualTo(404);

      Files.delete(filler);
      assertThat(server.put("default", BlockApiTest.key(100), more).statusCode()).isEqualTo(201);
      assertThat(health(server)).as("once space is back").contains("\"status\":\"UP\"");
      assertThat(server.metrics()).contains("kvcache_degraded 0.0");
      assertThat(server.metrics()).containsPattern("kvcache_lower_write_failures_total [1-9]");
    }
  }

  @Test
  void writeBehindTakesNoMorePutsThanItsWindowWhileTheDiskFailsThenRecovers() throws Exception {
    int window = 4;
    Path filler = small.path().resolve("filler");
    try (TestServer server = TestServer.start(small.path().resolve("data"), Map.of(
        "kvcache.cache.disk-capacity", "128MiB",
        "kvcache.cache.durability", "write_behind",
        "kvcache.cache.spill-queue-blocks", Integer.toString(window)))) {
      Tmpfs.fill(filler); // every write to the disk fails from now on
      byte[] block = new byte[BLOCK];
      new Random(5).nextBytes(block);
      int stored = 0;
      HttpResponse<byte[]> answer;
      while ((answer = server.put("default", BlockApiTest.key(stored), block)).statusCode() == 201) {
        stored++;
        assertThat(stored).as("PUTs answered 201 while the disk fails").isLessThanOrEqualTo(window);
        Thread.sleep(100); // for its copy to be tried, and fail
      }
      assertThat(stored).isEqualTo(window);
      assertThat(answer.statusCode()).isEqualTo(507);
      assertThat(new String(answer.body())).contains("\"error\":\"not-durable\"");
      assertThat(server.get("default", BlockApiTest.key(stored)).statusCode())
          .as("a PUT refused is not readable").isEqualTo(404);
      for (int i = 0; i < stored; i++) {
        assertThat(server.get("default", BlockApiTest.key(i)).body()).as("acknowledged block %d", i)
            .isEqualTo(block);
      }
      assertThat(health(server)).contains("\"status\":\"DEGRADED\"")
          .contains(window + " blocks written behind are in RAM only");
      assertThat(server.metrics()).containsPattern("kvcache_puts_not_durable_total [1-9]")
          .contains("kvcache_lower_failed_copies " + window + ".0");

      Files.delete(filler);
      long deadline = System.nanoTime() + 20_000_000_000L;
      while (server.put("default", BlockApiTest.key(stored), block).statusCode() != 201) {
        assertThat(System.nanoTime()).as("PUTs taken again once the disk has room").isLessThan(deadline);
        Thread.sleep(100);
      }
      assertThat(health(server)).contains("\"status\":\"UP\"");
    }
  }
}
