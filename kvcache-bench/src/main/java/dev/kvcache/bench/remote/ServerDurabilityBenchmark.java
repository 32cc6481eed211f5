package dev.kvcache.bench.remote;

import dev.kvcache.BlockKey;
import dev.kvcache.PutStatus;
import dev.kvcache.bench.Blocks;
import dev.kvcache.client.RemoteTier;
import dev.kvcache.client.RemoteTierConfig;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * PUTs through the Java client to a kvcache-server child process with a 1 GiB RAM tier over a disk
 * tier on the work tree's disk, under each {@code kvcache.cache.durability}: every PUT a new key,
 * so that once RAM is full each PUT also evicts. The server's jar is {@code
 * -Dkvcache.server.jar} (default {@code kvcache-server/target/kvcache-server.jar}).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class ServerDurabilityBenchmark {

  @Param({"ram_first", "write_behind", "write_through"})
  public String durability;

  @Param({"2097152"})
  public int blockBytes;

  @Param({"periodic"})
  public String syncPolicy;

  @Param({"target/durability-bench"})
  public String baseDir;

  private Path dir;
  private ChildProcess server;
  private RemoteTier remote;
  private final AtomicLong next = new AtomicLong();

  @Setup(Level.Trial)
  public void start() throws IOException {
    dir = Path.of(baseDir).toAbsolutePath();
    Blocks.deleteTree(dir);
    Files.createDirectories(dir);
    String jar = System.getProperty("kvcache.server.jar", "kvcache-server/target/kvcache-server.jar");
    server = ChildProcess.start("kvcache-server", List.of("java", "-XX:MaxDirectMemorySize=3g",
        "-Dmicronaut.server.port={port}", "-Dkvcache.cache.ram-bytes=1GiB",
        "-Dkvcache.cache.disk-dir=" + dir.resolve("data"), "-Dkvcache.cache.disk-capacity=8GiB",
        "-Dkvcache.cache.disk-min-free=0B", "-Dkvcache.cache.disk-sync-policy=" + syncPolicy,
        "-Dkvcache.cache.durability=" + durability, "-jar", jar));
    remote = new RemoteTier(RemoteTierConfig.builder().server("127.0.0.1", server.port)
        .maxBlockBytes(blockBytes).build());
  }

  /** One client thread's block, its first bytes made unique per PUT. */
  @State(Scope.Thread)
  public static class Client {
    ByteBuffer src;

    @Setup(Level.Trial)
    public void open(ServerDurabilityBenchmark bench) {
      src = Blocks.randomDirect(bench.blockBytes, 17);
    }
  }

  @Benchmark
  public PutStatus put(Client client) {
    long n = next.getAndIncrement();
    client.src.putLong(0, n);
    return remote.put(BlockKey.of(0x6475L, n), client.src);
  }

  @TearDown(Level.Trial)
  public void stop() throws InterruptedException, IOException {
    remote.close();
    server.close();
    Blocks.deleteTree(dir);
  }
}
