package dev.kvcache.bench.remote;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
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
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * PUTs through the Java client to a kvcache-server child process with a 1 GiB RAM tier over a disk
 * tier on the work tree's disk, under each {@code kvcache.cache.durability}: every PUT a new key,
 * so that once RAM is full each PUT also evicts; and GETs of 1 GiB of blocks put before; with {@code sealed}, into a namespace sealed at
 * rest. The server's jar is {@code
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

  /** The server's RAM tier ({@code kvcache.cache.ram-bytes}). */
  @Param({"1GiB"})
  public String ramBytes;

  /** Whether the namespace the blocks go to is sealed at rest ({@code kvcache.sealing.*}). */
  @Param({"false"})
  public boolean sealed;

  /** A master key for the sealed runs: 32 bytes of 7, base64. */
  private static final String MASTER_KEY = "1:BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";

  private Path dir;
  private ChildProcess server;
  private RemoteTier remote;
  private final AtomicLong next = new AtomicLong();
  /** The blocks {@code get} reads in turn, put before the trial: 1 GiB of them. */
  private int stored;

  @Setup(Level.Trial)
  public void start(BenchmarkParams params) throws IOException {
    dir = Path.of(baseDir).toAbsolutePath();
    Blocks.deleteTree(dir);
    Files.createDirectories(dir);
    String jar = System.getProperty("kvcache.server.jar", "kvcache-server/target/kvcache-server.jar");
    server = ChildProcess.start("kvcache-server", List.of("java", "-XX:MaxDirectMemorySize=3g",
        "-Dmicronaut.server.port={port}", "-Dkvcache.s3.enabled=false", "-Dkvcache.cache.ram-bytes=" + ramBytes,
        "-Dkvcache.cache.disk-dir=" + dir.resolve("data"), "-Dkvcache.cache.disk-capacity=8GiB",
        "-Dkvcache.cache.disk-min-free=0B", "-Dkvcache.cache.disk-sync-policy=" + syncPolicy,
        "-Dkvcache.cache.durability=" + durability,
        "-Dkvcache.sealing.namespaces=" + (sealed ? "default" : ""),
        "-Dkvcache.sealing.master-keys=" + (sealed ? MASTER_KEY : ""), "-jar", jar));
    remote = new RemoteTier(RemoteTierConfig.builder().server("127.0.0.1", server.port)
        .maxBlockBytes(blockBytes).build());
    if (params.getBenchmark().endsWith(".get")) {
      ByteBuffer src = Blocks.randomDirect(blockBytes, 19);
      stored = (int) ((1L << 30) / blockBytes);
      for (int i = 0; i < stored; i++) {
        src.putLong(0, i);
        if (remote.put(BlockKey.of(0x6765L, i), src) != PutStatus.STORED) {
          throw new IllegalStateException("put " + i + " was not stored");
        }
      }
    }
  }

  /** One client thread's block, its first bytes made unique per PUT. */
  @State(Scope.Thread)
  public static class Client {
    ByteBuffer src;
    ByteBuffer dst;

    @Setup(Level.Trial)
    public void open(ServerDurabilityBenchmark bench) {
      src = Blocks.randomDirect(bench.blockBytes, 17);
      dst = ByteBuffer.allocateDirect(bench.blockBytes);
    }
  }

  @Benchmark
  public PutStatus put(Client client) {
    long n = next.getAndIncrement();
    client.src.putLong(0, n);
    return remote.put(BlockKey.of(0x6475L, n), client.src);
  }

  /**
   * Reads the blocks put before the trial in turn: with a RAM tier smaller than them (a {@code
   * ramBytes} of 64MiB, say), from the disk tier, its files in the page cache.
   */
  @Benchmark
  public GetStatus get(Client client) {
    long n = next.getAndIncrement() % stored;
    return remote.getInto(BlockKey.of(0x6765L, n), client.dst.clear());
  }

  @TearDown(Level.Trial)
  public void stop() throws InterruptedException, IOException {
    remote.close();
    server.close();
    Blocks.deleteTree(dir);
  }
}
