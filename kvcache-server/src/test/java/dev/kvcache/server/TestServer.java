package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.KvCache;
import dev.kvcache.tiered.TieredCache;
import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/** A server on a free loopback port with a small RAM tier over a disk tier in {@code dir}. */
final class TestServer implements AutoCloseable {

  static final int MAX_BLOCK_BYTES = 8 << 20;

  final ApplicationContext context;
  final EmbeddedServer server;
  final HttpClient http = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(10))
      .build();

  private TestServer(Map<String, Object> properties) {
    this.context = ApplicationContext.run(properties);
    this.server = context.getBean(EmbeddedServer.class).start();
  }

  static TestServer start(Path dir) {
    return start(dir, Map.of());
  }

  static TestServer start(Path dir, Map<String, Object> extra) {
    return new TestServer(properties(dir, extra));
  }

  static Map<String, Object> properties(Path dir, Map<String, Object> extra) {
    Map<String, Object> p = new HashMap<>();
    p.put("micronaut.server.port", -1);
    p.put("kvcache.cache.ram-bytes", "64MiB");
    p.put("kvcache.cache.max-block-bytes", MAX_BLOCK_BYTES + "B");
    p.put("kvcache.cache.disk-dir", dir.toString());
    p.put("kvcache.cache.disk-capacity", "512MiB");
    p.put("kvcache.namespaces", "default,other");
    // the stop waits this long for open connections: JDK 25's HttpClient keeps its HTTP/2
    // connections open, and the default 30 s would be spent on every test that used one
    p.put("micronaut.lifecycle.graceful-shutdown.grace-period", "3s");
    p.putAll(extra);
    return p;
  }

  URI uri(String path) {
    return URI.create(server.getURL() + path);
  }

  static String blockPath(String namespace, String key) {
    return "/v1/namespaces/" + namespace + "/blocks/" + key;
  }

  HttpResponse<byte[]> put(String namespace, String key, byte[] body) throws Exception {
    return send(HttpRequest.newBuilder(uri(blockPath(namespace, key)))
        .header("Content-Type", "application/octet-stream")
        .PUT(HttpRequest.BodyPublishers.ofByteArray(body)));
  }

  HttpResponse<byte[]> get(String namespace, String key) throws Exception {
    return send(HttpRequest.newBuilder(uri(blockPath(namespace, key))).GET());
  }

  HttpResponse<byte[]> send(HttpRequest.Builder request) throws Exception {
    return http.send(request.timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofByteArray());
  }

  /** What {@code /prometheus} answers now. */
  String metrics() throws Exception {
    return new String(send(HttpRequest.newBuilder(uri("/prometheus"))).body(),
        java.nio.charset.StandardCharsets.UTF_8);
  }

  /**
   * The value of the series of {@code name} whose label {@code label} is {@code value}, or null
   * if there is none.
   */
  Double metric(String name, String label, String value) throws Exception {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^" + name + "\\{[^}]*"
        + label + "=\"" + value + "\"[^}]*\\} (\\S+)$").matcher(metrics());
    return m.find() ? Double.parseDouble(m.group(1)) : null;
  }

  /** Bytes the cache's RAM tier holds, written or reserved for a body on its way. */
  long ramBytesUsed() {
    return ((TieredCache) context.getBean(KvCache.class)).ramStats().bytesUsed();
  }

  /**
   * Waits (a refused request's cleanup may trail its answer) until the RAM tier holds {@code
   * bytes} again: what a refused body reserved is free. The wait is far below the body timeout
   * (60 s), so room held until a body times out fails; it is long because a busy machine can
   * leave the server seconds behind its clients after a burst of aborted requests (seen: 5 s).
   */
  void awaitRamBytesUsed(long bytes) throws InterruptedException {
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (ramBytesUsed() != bytes && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertThat(ramBytesUsed()).as("RAM bytes in use after a refused body").isEqualTo(bytes);
  }

  @Override
  public void close() {
    context.close();
  }
}
