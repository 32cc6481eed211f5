package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.s3.testkit.InProcessS3;
import dev.kvcache.testkit.TestBytes;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A fleet of three kvcache-server processes sharing one bucket of a real S3 server: a block stored
 * through any server is a hit through any other after the one that stored it stops, on a server
 * that joins later, and after every server restarts with empty RAM and disk.
 */
@Tag("integration")
class FleetTest {

  private static final int BLOCKS = 24;
  private static final int BLOCK = 256 << 10;
  private static final Pattern UPLOADS =
      Pattern.compile("kvcache_uploads_total\\{to=\"s3\"} ([0-9.E]+)");
  private static InProcessS3 s3;

  @TempDir Path temp;
  private int servers;
  private final HttpClient http = TestServer.http(HttpClient.Version.HTTP_1_1);

  @BeforeAll
  static void startStore() throws Exception {
    s3 = new InProcessS3();
  }

  @AfterAll
  static void stopStore() {
    s3.close();
  }

  /** A server with its own new disk directory and empty RAM, over the fleet's bucket. */
  private TestServer join() throws Exception {
    Map<String, String> settings = TestServer.objectTier(s3, "fleet/", "1GiB");
    settings.put("kvcache.cache.ram-bytes", "32MiB");
    settings.put("kvcache.cache.max-block-bytes", "1MiB");
    settings.put("kvcache.cache.disk-dir", temp.resolve("server-" + servers++).toString());
    settings.put("kvcache.cache.disk-capacity", "64MiB");
    settings.put("kvcache.cache.disk-min-free", "0B");
    settings.put("kvcache.cache.s3.lookup-budget", "2s");
    return TestServer.startChild(settings);
  }

  private HttpResponse<byte[]> send(TestServer server, HttpRequest.Builder request)
      throws Exception {
    return http.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
  }

  private URI block(TestServer server, int i) {
    return server.base.resolve(TestServer.blockPath("default", BlockApiTest.key(i)));
  }

  private double uploads(TestServer server) throws Exception {
    String metrics = new String(send(server,
        HttpRequest.newBuilder(server.base.resolve("/prometheus"))).body());
    Matcher m = UPLOADS.matcher(metrics);
    return m.find() ? Double.parseDouble(m.group(1)) : 0;
  }

  /** Every block, read through {@code server}, is the block stored. */
  private void assertAllHitsThrough(TestServer server, String when) throws Exception {
    for (int i = 0; i < BLOCKS; i++) {
      HttpResponse<byte[]> got = send(server, HttpRequest.newBuilder(block(server, i)));
      assertThat(got.statusCode()).as("block %d %s", i, when).isEqualTo(200);
      assertThat(got.body()).as("block %d %s", i, when).isEqualTo(TestBytes.random(BLOCK, i));
    }
  }

  private static void stop(TestServer server) throws InterruptedException {
    server.terminate();
    server.process.waitFor();
  }

  @Test
  void blocksOutliveTheServersThatStoredThem() throws Exception {
    List<TestServer> fleet = new ArrayList<>(List.of(join(), join(), join()));
    try {
      for (int i = 0; i < BLOCKS; i++) { // spread over the servers, as a client shards
        TestServer to = fleet.get(i % fleet.size());
        assertThat(send(to, HttpRequest.newBuilder(block(to, i))
            .header("Content-Type", "application/octet-stream")
            .PUT(HttpRequest.BodyPublishers.ofByteArray(TestBytes.random(BLOCK, i))))
            .statusCode()).isEqualTo(201);
      }
      long deadline = System.nanoTime() + 60_000_000_000L;
      double uploaded = 0;
      while (uploaded < BLOCKS && System.nanoTime() < deadline) {
        Thread.sleep(100);
        uploaded = 0;
        for (TestServer s : fleet) {
          uploaded += uploads(s);
        }
      }
      assertThat(uploaded).as("blocks uploaded, all servers together").isEqualTo(BLOCKS);

      TestServer leaving = fleet.remove(0); // kill -9: what it held in RAM and on disk is gone
      leaving.kill();
      for (TestServer s : fleet) {
        assertAllHitsThrough(s, "after a server left");
      }

      fleet.add(join());
      assertAllHitsThrough(fleet.get(fleet.size() - 1), "on a server that joined");

      for (TestServer s : fleet) {
        stop(s);
      }
      fleet.clear();
      fleet.addAll(List.of(join(), join(), join()));
      for (TestServer s : fleet) {
        assertAllHitsThrough(s, "after the fleet restarted empty");
      }
    } finally {
      for (TestServer s : fleet) {
        s.kill();
      }
    }
  }
}
