package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.KvCache;
import dev.kvcache.s3.testkit.InProcessS3;
import dev.kvcache.tiered.TieredCache;
import io.micrometer.core.instrument.MeterRegistry;
import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A kvcache-server for tests, on a free loopback port, in one of two modes:
 *
 * <ul>
 *   <li>in the test's JVM ({@link #start(Path, Map)}): its beans are at hand ({@link #context},
 *       {@link #bean}), with a small RAM tier over a disk tier in a directory by default;
 *   <li>as a child process ({@link #startChild(Map)}), started by {@link KvCacheServer#main} from
 *       the test's class path, so that it can be killed ({@link #kill()}) or sent {@code SIGTERM}
 *       ({@link #terminate()}) as an operator would.
 * </ul>
 *
 * Both answer HTTP at {@link #base}, and both read their metrics from {@code /prometheus}. The
 * modules whose tests need a server share this class through kvcache-server's test-jar.
 */
public final class TestServer implements AutoCloseable {

  /** The largest block of a server started in the test's JVM, unless a test sets another. */
  public static final int MAX_BLOCK_BYTES = 8 << 20;

  private static final Pattern LISTENING = Pattern.compile("listening on (http://\\S+)");

  /** The server's application context, in the test's JVM; null for a child process. */
  public final ApplicationContext context;
  /** The server's listener, in the test's JVM; null for a child process. */
  public final EmbeddedServer server;
  /** The child process; null for a server in the test's JVM. */
  public final Process process;
  /** Where the server listens. */
  public final URI base;
  /** An HTTP/1.1 client for the requests of {@link #put}, {@link #get} and {@link #send}. */
  public final HttpClient http = http(HttpClient.Version.HTTP_1_1);

  private TestServer(ApplicationContext context, Process process, URI base) {
    this.context = context;
    this.server = context == null ? null : context.getBean(EmbeddedServer.class);
    this.process = process;
    this.base = base;
  }

  /** A server in the test's JVM with the defaults of {@link #properties}. */
  public static TestServer start(Path dir) {
    return start(dir, Map.of());
  }

  /** A server in the test's JVM with the defaults of {@link #properties} and {@code extra}. */
  public static TestServer start(Path dir, Map<String, ?> extra) {
    ApplicationContext context = ApplicationContext.run(properties(dir, extra));
    try {
      EmbeddedServer server = context.getBean(EmbeddedServer.class).start();
      return new TestServer(context, null, URI.create(server.getURL().toString()));
    } catch (RuntimeException | Error e) {
      context.close();
      throw e;
    }
  }

  /**
   * The settings of a server in the test's JVM: any free port, 64 MiB of RAM taking blocks of up
   * to {@link #MAX_BLOCK_BYTES}, over a 512 MiB disk tier in {@code dir} (none if {@code dir} is
   * null), the namespaces {@code default} and {@code other}, the S3 API on any free port; then
   * {@code extra}.
   */
  public static Map<String, Object> properties(Path dir, Map<String, ?> extra) {
    Map<String, Object> p = new HashMap<>();
    p.put("micronaut.server.port", -1);
    p.put("kvcache.s3.port", -1);
    p.put("kvcache.cache.ram-bytes", "64MiB");
    p.put("kvcache.cache.max-block-bytes", MAX_BLOCK_BYTES + "B");
    p.put("kvcache.cache.disk-dir", dir == null ? "" : dir.toString());
    p.put("kvcache.cache.disk-capacity", "512MiB");
    p.put("kvcache.namespaces", "default,other");
    // the stop waits this long for open connections: JDK 25's HttpClient keeps its HTTP/2
    // connections open, and the default 30 s would be spent on every test that used one
    p.put("micronaut.lifecycle.graceful-shutdown.grace-period", "3s");
    p.putAll(extra);
    return p;
  }

  /**
   * A server in a child process with these settings alone (system properties, such as {@code
   * kvcache.cache.disk-dir}, over the server's own defaults), on a free loopback port; returns
   * once it says where it listens.
   */
  public static TestServer startChild(Map<String, String> settings) throws IOException {
    return startChild(settings, Map.of());
  }

  /** As {@link #startChild(Map)}, with these variables added to the child's environment. */
  public static TestServer startChild(Map<String, String> settings, Map<String, String> env)
      throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> command = new ArrayList<>(List.of(java, "-Xmx256m"));
    for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (arg.startsWith("--add-") || arg.startsWith("--enable-native-access")
          || arg.startsWith("--sun-misc-unsafe")) {
        command.add(arg);
      }
    }
    command.addAll(List.of("-cp", System.getProperty("java.class.path"),
        "-Dmicronaut.server.port=-1", "-Dkvcache.s3.port=-1"));
    settings.forEach((name, value) -> command.add("-D" + name + "=" + value));
    command.add(KvCacheServer.class.getName());
    ProcessBuilder builder = new ProcessBuilder(command)
        .redirectError(ProcessBuilder.Redirect.DISCARD);
    builder.environment().putAll(env);
    Process process = builder.start();
    try {
      return new TestServer(null, process, listening(process));
    } catch (IOException | RuntimeException | Error e) {
      process.destroyForcibly();
      throw e;
    }
  }

  /**
   * The settings of an object tier in {@code s3}'s bucket under {@code prefix} (a folder of the
   * test's own), of {@code capacity}; a map the caller may add to.
   */
  public static Map<String, String> objectTier(InProcessS3 s3, String prefix, String capacity) {
    Map<String, String> m = new HashMap<>();
    m.put("kvcache.cache.s3.endpoint", s3.endpoint().toString());
    m.put("kvcache.cache.s3.bucket", InProcessS3.BUCKET);
    m.put("kvcache.cache.s3.capacity", capacity);
    m.put("kvcache.cache.s3.prefix", prefix);
    m.put("kvcache.cache.s3.access-key-id", InProcessS3.ACCESS_KEY);
    m.put("kvcache.cache.s3.secret-access-key", InProcessS3.SECRET_KEY);
    return m;
  }

  /** A client of the given HTTP version, as the tests of a server use. */
  public static HttpClient http(HttpClient.Version version) {
    return HttpClient.newBuilder().version(version).connectTimeout(Duration.ofSeconds(10)).build();
  }

  /** The port the server listens on. */
  public int port() {
    return base.getPort();
  }

  /** {@code path} on this server. */
  public URI uri(String path) {
    return base.resolve(path);
  }

  /** The path of a block. */
  public static String blockPath(String namespace, String key) {
    return "/v1/namespaces/" + namespace + "/blocks/" + key;
  }

  /** PUTs a block. */
  public HttpResponse<byte[]> put(String namespace, String key, byte[] body) throws Exception {
    return send(HttpRequest.newBuilder(uri(blockPath(namespace, key)))
        .header("Content-Type", "application/octet-stream")
        .PUT(HttpRequest.BodyPublishers.ofByteArray(body)));
  }

  /** GETs a block. */
  public HttpResponse<byte[]> get(String namespace, String key) throws Exception {
    return send(HttpRequest.newBuilder(uri(blockPath(namespace, key))).GET());
  }

  /** Sends a request with a 30 s time-out and reads its body whole. */
  public HttpResponse<byte[]> send(HttpRequest.Builder request) throws Exception {
    return http.send(request.timeout(Duration.ofSeconds(30)).build(),
        HttpResponse.BodyHandlers.ofByteArray());
  }

  /** What {@code /prometheus} answers now. */
  public String metrics() throws Exception {
    return new String(send(HttpRequest.newBuilder(uri("/prometheus"))).body(),
        StandardCharsets.UTF_8);
  }

  /**
   * The value of the series of {@code name} whose label {@code label} is {@code value}, or null
   * if there is none.
   */
  public Double metric(String name, String label, String value) throws Exception {
    return series(name + "\\{[^}]*" + label + "=\"" + value + "\"[^}]*\\}");
  }

  /** The value of the series of {@code name} without labels, or null if there is none. */
  public Double metric(String name) throws Exception {
    return series(name + "(?:\\{\\})?");
  }

  private Double series(String pattern) throws Exception {
    Matcher m = Pattern.compile("(?m)^" + pattern + " (\\S+)$").matcher(metrics());
    return m.find() ? Double.parseDouble(m.group(1)) : null;
  }

  /** A bean of the server's, in the test's JVM. */
  public <T> T bean(Class<T> type) {
    if (context == null) {
      throw new IllegalStateException("a child process's beans are not at hand");
    }
    return context.getBean(type);
  }

  /** Blocks the server answered ({@code sent}) or stored ({@code received}) as containers. */
  public double wireContainers(String direction) {
    return bean(MeterRegistry.class).get("kvcache.wire.containers").tag("direction", direction)
        .functionCounter().count();
  }

  /** Blocks the server's cache holds for readers, pinned lookups' included. */
  public double leasesOpen() {
    return bean(MeterRegistry.class).get("kvcache.leases.open").gauge().value();
  }

  /** Bytes the cache's RAM tier holds, written or reserved for a body on its way. */
  public long ramBytesUsed() {
    return ((TieredCache) bean(KvCache.class)).ramStats().bytesUsed();
  }

  /**
   * Waits (a refused request's cleanup may trail its answer) until the RAM tier holds {@code
   * bytes} again, and still does 200 ms later: what a refused body reserved is free. The wait is far below the body timeout
   * (60 s), so room held until a body times out fails; it is long because a busy machine can
   * leave the server seconds behind its clients after a burst of aborted requests (seen: 5 s).
   */
  public void awaitRamBytesUsed(long bytes) throws InterruptedException {
    long deadline = System.nanoTime() + 20_000_000_000L;
    long used = ramBytesUsed();
    // twice in a row, 200 ms apart: an aborted body the server takes up late reserves its room
    // after the first, and frees it again
    while (System.nanoTime() < deadline) {
      if (used == bytes) {
        Thread.sleep(200);
        used = ramBytesUsed();
        if (used == bytes) {
          break;
        }
      } else {
        Thread.sleep(10);
        used = ramBytesUsed();
      }
    }
    assertThat(used).as("RAM bytes in use after a refused body").isEqualTo(bytes);
  }

  /** {@code kill -9} of a child process: it ends at once, without closing anything. */
  public void kill() throws InterruptedException {
    child().toHandle().destroyForcibly();
    process.waitFor(10, TimeUnit.SECONDS);
  }

  /** {@code SIGTERM} to a child process, as an operator or a container runtime stops the server. */
  public void terminate() {
    child().toHandle().destroy();
  }

  private Process child() {
    if (process == null) {
      throw new IllegalStateException("a server in the test's JVM is stopped by close()");
    }
    return process;
  }

  /** Reads the child's output until it says where it listens; the rest of its output is drained. */
  private static URI listening(Process server) throws IOException {
    BufferedReader out = new BufferedReader(
        new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
    for (String line; (line = out.readLine()) != null; ) {
      Matcher m = LISTENING.matcher(line);
      if (m.find()) {
        Thread drain = new Thread(() -> {
          try {
            while (out.readLine() != null) {
              // discard
            }
          } catch (IOException ignored) {
            // the server is gone
          }
        });
        drain.setDaemon(true);
        drain.start();
        return URI.create(m.group(1));
      }
    }
    throw new AssertionError("the server exited without listening (exit " + waitExit(server) + ")");
  }

  private static int waitExit(Process p) {
    try {
      return p.waitFor(10, TimeUnit.SECONDS) ? p.exitValue() : -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }

  /** Stops a server in the test's JVM; kills a child process. */
  @Override
  public void close() {
    if (context != null) {
      context.close();
      return;
    }
    try {
      kill();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
