package dev.kvcache.bench.remote;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** A server run as a child process for a benchmark, on loopback, stopped by its process id. */
final class ChildProcess implements AutoCloseable {

  final int port;
  private final Process process;

  private ChildProcess(int port, Process process) {
    this.port = port;
    this.process = process;
  }

  /** Starts {@code command} (with {@code {port}} replaced) and waits until the port accepts. */
  static ChildProcess start(String name, List<String> command) throws IOException {
    int port = freePort();
    List<String> cmd = command.stream().map(a -> a.replace("{port}", Integer.toString(port))).toList();
    File log = File.createTempFile("kvcache-bench-" + name, ".log");
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log).start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 200);
        return new ChildProcess(port, p);
      } catch (IOException notYet) {
        if (!p.isAlive()) {
          break;
        }
        sleep(100);
      }
    }
    p.destroyForcibly();
    throw new IOException(name + " did not start; see " + log);
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() throws InterruptedException {
    process.destroy();
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      process.destroyForcibly();
    }
  }
}
