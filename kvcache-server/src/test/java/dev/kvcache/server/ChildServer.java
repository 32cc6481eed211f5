package dev.kvcache.server;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * kvcache-server as a child process of the test, started by {@link KvCacheServer#main} from the
 * test's class path, so that it can be killed or sent {@code SIGTERM} as an operator would.
 */
final class ChildServer implements AutoCloseable {

  private static final Pattern LISTENING = Pattern.compile("listening on (http://\\S+)");

  final Process process;
  /** Where it listens, as it printed. */
  final URI base;

  private ChildServer(Process process, URI base) {
    this.process = process;
    this.base = base;
  }

  /**
   * Starts a server with these settings (system properties, such as {@code kvcache.cache.disk-dir})
   * on a free loopback port and waits until it says where it listens.
   */
  static ChildServer start(Map<String, String> settings) throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> command = new ArrayList<>(List.of(java, "-Xmx256m"));
    for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (arg.startsWith("--add-") || arg.startsWith("--enable-native-access")
          || arg.startsWith("--sun-misc-unsafe")) {
        command.add(arg);
      }
    }
    command.addAll(List.of("-cp", System.getProperty("java.class.path"),
        "-Dmicronaut.server.port=-1"));
    settings.forEach((name, value) -> command.add("-D" + name + "=" + value));
    command.add(KvCacheServer.class.getName());
    Process process = new ProcessBuilder(command)
        .redirectError(ProcessBuilder.Redirect.DISCARD).start();
    try {
      return new ChildServer(process, listening(process));
    } catch (IOException | RuntimeException | Error e) {
      process.destroyForcibly();
      throw e;
    }
  }

  /** A client of the given HTTP version, as the tests of a child server use. */
  static HttpClient http(HttpClient.Version version) {
    return HttpClient.newBuilder().version(version).connectTimeout(Duration.ofSeconds(10)).build();
  }

  /** {@code kill -9}: the process ends at once, without closing anything. */
  void kill() throws InterruptedException {
    process.toHandle().destroyForcibly();
    process.waitFor(10, TimeUnit.SECONDS);
  }

  /** {@code SIGTERM}, as an operator or a container runtime stops the server; does not wait. */
  void terminate() {
    process.toHandle().destroy();
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

  @Override
  public void close() throws InterruptedException {
    kill();
  }
}
