package dev.kvcache.bench.remote;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.bench.Blocks;
import dev.kvcache.client.RemoteTier;
import dev.kvcache.client.RemoteTierConfig;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What the end-to-end CRC32C costs: the Java client's PUTs and GETs of one block size against a
 * kvcache-server child process (RAM tier only), {@code crc32c} (today's server, whose writers
 * compute each block's checksum, and a client that sends and checks it) beside {@code none} (a
 * server built without checksums, {@code -Dkvcache.server.jar.before}, and a client with {@code
 * checksums(false)}). PUTs overwrite 128 keys, GETs read 64 blocks put at the start.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 3, jvmArgsAppend = {"-Xmx1g", "-XX:MaxDirectMemorySize=2g"})
@Warmup(iterations = 4, time = 2)
@Measurement(iterations = 5, time = 2)
public class EndToEndChecksumBenchmark {

  private static final int KEYS = 128;
  private static final int READ_KEYS = 64;

  /** {@code none}, {@code crc32c}, or {@code server}: today's server with a client that neither sends nor checks. */
  @Param({"none", "crc32c"})
  public String checksums;

  @Param({"2097152"})
  public int blockBytes;

  private ChildProcess server;
  private RemoteTier remote;

  @Setup(Level.Trial)
  public void start() throws IOException {
    boolean on = checksums.equals("crc32c");
    String jar = System.getProperty(checksums.equals("none")
        ? "kvcache.server.jar.before" : "kvcache.server.jar");
    if (jar == null) {
      throw new IllegalStateException("set -Dkvcache.server.jar and -Dkvcache.server.jar.before");
    }
    server = ChildProcess.start("kvcache-server", List.of("java", "-XX:MaxDirectMemorySize=2g",
        "-Dmicronaut.server.port={port}", "-Dkvcache.s3.enabled=false", "-Dkvcache.cache.ram-bytes=1GiB",
        "-Dkvcache.cache.disk-dir=", "-jar", jar));
    remote = new RemoteTier(RemoteTierConfig.builder().server("127.0.0.1", server.port)
        .maxBlockBytes(blockBytes).checksums(on).build());
    ByteBuffer block = Blocks.randomDirect(blockBytes, 3);
    for (int i = 0; i < READ_KEYS; i++) {
      if (remote.put(BlockKey.of(1, i), block) != PutStatus.STORED) {
        throw new IllegalStateException("the server did not store block " + i);
      }
    }
  }

  /** One client thread's block to put and buffer to read into. */
  @State(Scope.Thread)
  public static class Client {
    ByteBuffer src;
    ByteBuffer dst;
    long n;

    @Setup(Level.Trial)
    public void open(EndToEndChecksumBenchmark bench) {
      src = Blocks.randomDirect(bench.blockBytes, 17);
      dst = ByteBuffer.allocateDirect(bench.blockBytes);
    }
  }

  @Benchmark
  public PutStatus put(Client client) {
    return remote.put(BlockKey.of(2, client.n++ % KEYS), client.src);
  }

  @Benchmark
  public GetStatus getInto(Client client) {
    client.dst.clear();
    GetStatus status = remote.getInto(BlockKey.of(1, client.n++ % READ_KEYS), client.dst);
    if (status != GetStatus.HIT) {
      throw new IllegalStateException("a block put at the start missed: " + status);
    }
    return status;
  }

  @TearDown(Level.Trial)
  public void stop() throws InterruptedException {
    remote.close();
    server.close();
  }
}
