package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.s3.testkit.InProcessS3;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * The server with an object tier below its disk ({@code kvcache.cache.s3.*}), over a real S3
 * server on loopback: PUTs reach the bucket behind the disk, a server started on an empty disk
 * serves them from the bucket, and the tier's requests show in the metrics.
 */
class ObjectTierServerTest {

  private static final int BLOCK = 1 << 20;
  private static InProcessS3 s3;

  @TempDir Path temp;

  @BeforeAll
  static void startStore() throws Exception {
    s3 = new InProcessS3();
  }

  @AfterAll
  static void stopStore() {
    s3.close();
  }

  private static Map<String, String> settings(String prefix) {
    Map<String, String> m = TestServer.objectTier(s3, prefix, "256MiB");
    m.put("kvcache.cache.s3.lookup-budget", "5s");
    m.put("kvcache.cache.s3.upload-threads", "2");
    return m;
  }

  @Test
  void putsReachTheBucketAndAServerOnAnEmptyDiskServesThem() throws Exception {
    byte[][] blocks = new byte[6][BLOCK];
    Random random = new Random(7);
    try (TestServer server = TestServer.start(temp.resolve("a"), settings("srv1/"))) {
      for (int i = 0; i < blocks.length; i++) {
        random.nextBytes(blocks[i]);
        assertThat(server.put("default", BlockApiTest.key(i), blocks[i]).statusCode())
            .isEqualTo(201);
      }
    } // closing writes RAM to disk and waits for the uploads
    try (S3AsyncClient client = s3.client()) {
      long objects = client.listObjectsV2(b -> b.bucket(InProcessS3.BUCKET).prefix("srv1/"))
          .join().contents().stream().map(S3Object::key)
          .filter(k -> !k.endsWith("namespace.json")).count();
      assertThat(objects).isEqualTo(blocks.length);
    }

    Map<String, String> inFleet = settings("srv1/");
    inFleet.put("kvcache.cache.s3.fleet", "127.0.0.1:7070, 127.0.0.1:7071");
    inFleet.put("kvcache.cache.s3.fleet-self", "127.0.0.1:7071");
    try (TestServer server = TestServer.start(temp.resolve("b"), inFleet)) {
      for (int i = 0; i < blocks.length; i++) {
        assertThat(server.get("default", BlockApiTest.key(i)).body()).as("block %d", i)
            .isEqualTo(blocks[i]);
      }
      String m = server.metrics();
      assertThat(m).containsPattern("kvcache_s3_requests_total\\{op=\"GET\"} [1-9]");
      assertThat(m).containsPattern("kvcache_tier_hits_total\\{tier=\"s3\"} 6.0");
      assertThat(m).contains("kvcache_s3_delete_backlog 0.0");
      assertThat(m).contains("kvcache_s3_fleet_servers 2.0");
      assertThat(new String(server.send(HttpRequest.newBuilder(server.uri("/health"))).body()))
          .contains("\"status\":\"UP\"");
    }
  }

  @Test
  void aServerItsFleetDoesNotListIsDegradedAndSaysWhatItSaw() throws Exception {
    Map<String, String> lost = settings("srv4/");
    lost.put("kvcache.cache.s3.fleet-dns", "localhost:7070");
    lost.put("kvcache.cache.s3.fleet-self", "10.1.2.3:7070"); // not among localhost's addresses
    try (TestServer server = TestServer.start(temp.resolve("f"), lost)) {
      String health = new String(server.send(HttpRequest.newBuilder(server.uri("/health")))
          .body());
      assertThat(health).contains("\"status\":\"DEGRADED\"")
          .contains("not among the fleet's servers").contains("127.0.0.1:7070");
      HttpResponse<byte[]> ready = server.send(HttpRequest.newBuilder(
          server.uri("/health/readiness")));
      assertThat(ready.statusCode()).as("ready: a degraded server serves").isEqualTo(200);
      assertThat(new String(ready.body())).contains("\"status\":\"DEGRADED\"");
      assertThat(server.send(HttpRequest.newBuilder(server.uri("/health/liveness"))).statusCode())
          .isEqualTo(200);
      assertThat(server.metrics()).contains("kvcache_s3_fleet_member 0.0")
          .contains("kvcache_s3_paused 0.0");
      assertThat(server.put("default", BlockApiTest.key(1), new byte[BLOCK]).statusCode())
          .as("it serves all the same").isEqualTo(201);
    }
  }

  @Test
  void aNamespaceIsDroppedFromTheBucketWhole() throws Exception {
    try (TestServer server = TestServer.start(temp.resolve("d"), settings("srv3/"));
        S3AsyncClient client = s3.client()) {
      for (int i = 0; i < 3; i++) {
        assertThat(server.put("default", BlockApiTest.key(i), new byte[BLOCK]).statusCode())
            .isEqualTo(201);
      }
      long deadline = System.nanoTime() + 30_000_000_000L;
      while (objects(client, "srv3/") < 4 && System.nanoTime() < deadline) {
        Thread.sleep(50); // the uploads go behind the puts
      }
      assertThat(objects(client, "srv3/")).as("three blocks and a descriptor").isEqualTo(4);
      HttpResponse<byte[]> drop = server.send(HttpRequest.newBuilder(
          server.uri("/v1/namespaces/default/objects")).DELETE());
      assertThat(drop.statusCode()).isEqualTo(200);
      assertThat(new String(drop.body())).contains("\"blocks\":3");
      while (objects(client, "srv3/") > 0 && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      assertThat(objects(client, "srv3/")).isZero();
      assertThat(server.send(HttpRequest.newBuilder(
          server.uri("/v1/namespaces/nowhere/objects")).DELETE()).statusCode()).isEqualTo(404);
    }
    try (TestServer plain = TestServer.start(temp.resolve("e"), Map.of())) {
      HttpResponse<byte[]> none = plain.send(HttpRequest.newBuilder(
          plain.uri("/v1/namespaces/default/objects")).DELETE());
      assertThat(none.statusCode()).isEqualTo(404);
      assertThat(new String(none.body())).contains("no object tier");
    }
  }

  private static long objects(S3AsyncClient client, String prefix) {
    return client.listObjectsV2(b -> b.bucket(InProcessS3.BUCKET).prefix(prefix)).join()
        .contents().size();
  }

  @Test
  void aMisspeltObjectTierSettingStopsTheStartNamingIt() {
    Map<String, String> m = settings("srv2/");
    m.put("kvcache.cache.s3.lookup-budgett", "1s");
    assertThat(org.assertj.core.api.Assertions.catchThrowable(
        () -> TestServer.start(temp.resolve("c"), m)))
        .hasStackTraceContaining("kvcache.cache.s3.lookup-budgett");
    Map<String, String> upload = settings("srv2/");
    upload.put("kvcache.cache.s3.upload", "sometimes");
    assertThat(org.assertj.core.api.Assertions.catchThrowable(
        () -> TestServer.start(temp.resolve("c2"), upload)))
        .hasStackTraceContaining("kvcache.cache.s3.upload")
        .hasStackTraceContaining("every_block, evicted");
  }
}
