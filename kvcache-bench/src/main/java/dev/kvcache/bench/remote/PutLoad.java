package dev.kvcache.bench.remote;

import dev.kvcache.BlockKey;
import dev.kvcache.PutStatus;
import dev.kvcache.client.RemoteTier;
import dev.kvcache.client.RemoteTierConfig;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReference;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * PUTs from the Java client ({@link RemoteTier}, HTTP/2) for {@code put_path.py}: a long-lived
 * process, so that its JIT warms up once, driven by one command per line on its standard input.
 *
 * <pre>
 * put FIRST COUNT LATENCIES
 * </pre>
 *
 * puts {@code COUNT} blocks under the new keys {@code FIRST .. FIRST+COUNT-1}, split evenly over
 * {@code --threads} threads that share one {@link RemoteTier} (as a JVM serving stack shares it),
 * each with its own direct buffer of random bytes whose first 8 bytes are the key's number. It
 * answers one JSON line: {@code {"next": N, "latencies_s": [...]}} (the latencies of every put
 * when {@code LATENCIES} is 1, else empty), or {@code {"error": "..."}} when a put was not
 * stored. End of input ends the process.
 */
@Command(name = "put-load", mixinStandardHelpOptions = true,
    description = "Puts blocks through the Java client (HTTP/2), as put_path.py asks on stdin.")
public final class PutLoad implements Callable<Integer> {

  @Option(names = "--port", required = true, description = "the server's port on 127.0.0.1")
  int port;

  @Option(names = "--threads", defaultValue = "4", description = "calling threads")
  int threads;

  @Option(names = "--block-bytes", required = true, description = "bytes per block")
  int blockBytes;

  public static void main(String[] args) {
    System.exit(new CommandLine(new PutLoad()).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    ByteBuffer[] blocks = new ByteBuffer[threads];
    for (int t = 0; t < threads; t++) {
      byte[] random = new byte[blockBytes];
      ThreadLocalRandom.current().nextBytes(random);
      blocks[t] = ByteBuffer.allocateDirect(blockBytes).put(random).flip();
    }
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    try (RemoteTier remote = new RemoteTier(RemoteTierConfig.builder().server("127.0.0.1", port)
        .maxBlockBytes(blockBytes).build());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
      String line;
      while ((line = in.readLine()) != null) {
        String[] words = line.trim().split("\\s+");
        if (words.length != 4 || !words[0].equals("put")) {
          out.println("{\"error\": \"expected: put FIRST COUNT LATENCIES\"}");
          continue;
        }
        out.println(put(remote, blocks, Long.parseLong(words[1]), Long.parseLong(words[2]),
            words[3].equals("1")));
      }
    }
    return 0;
  }

  private String put(RemoteTier remote, ByteBuffer[] blocks, long first, long count, boolean timed)
      throws InterruptedException {
    long perThread = Math.max(1, count / threads);
    AtomicReference<String> failure = new AtomicReference<>();
    List<double[]> latencies = new ArrayList<>();
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      ByteBuffer block = blocks[t];
      long from = first + t * perThread;
      double[] mine = new double[timed ? (int) perThread : 0];
      latencies.add(mine);
      Thread worker = new Thread(() -> {
        for (long i = 0; i < perThread && failure.get() == null; i++) {
          long n = from + i;
          block.putLong(0, n);
          long t0 = System.nanoTime();
          try {
            PutStatus status = remote.put(BlockKey.of(0x7070L, n), block.duplicate());
            if (status != PutStatus.STORED) {
              failure.compareAndSet(null, "put " + n + ": " + status);
            }
          } catch (RuntimeException e) {
            failure.compareAndSet(null, "put " + n + ": " + e);
          }
          if (timed) {
            mine[(int) i] = (System.nanoTime() - t0) / 1e9;
          }
        }
      }, "put-load-" + t);
      worker.start();
      workers.add(worker);
    }
    for (Thread w : workers) {
      w.join();
    }
    if (failure.get() != null) {
      return "{\"error\": \"" + failure.get().replace("\\", "/").replace("\"", "'") + "\"}";
    }
    StringBuilder json = new StringBuilder("{\"next\": ").append(first + perThread * threads)
        .append(", \"latencies_s\": [");
    String sep = "";
    for (double[] mine : latencies) {
      for (double s : mine) {
        json.append(sep).append(String.format(Locale.ROOT, "%.6f", s));
        sep = ", ";
      }
    }
    return json.append("]}").toString();
  }
}
