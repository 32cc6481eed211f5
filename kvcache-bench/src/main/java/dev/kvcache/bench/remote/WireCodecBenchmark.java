package dev.kvcache.bench.remote;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.bench.Blocks;
import dev.kvcache.client.RemoteTier;
import dev.kvcache.client.RemoteTierConfig;
import dev.kvcache.codec.BlockCodec;
import dev.kvcache.codec.Filter;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
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
 * The wire codec against blocks sent as they are, in the same run, on the same server (a child
 * process with {@code kvcache.wire-codec = lz4}): {@code plainGet}/{@code plainPut} from a client
 * without a codec, {@code codedGet}/{@code codedPut} from one with it, on real KV tensors ({@code
 * ../shared/data/kv/}). What it is worth depends on the link: {@code compare-wire-codec.sh} runs it
 * on loopback as it is and shaped to a slower rate. The set-up prints the bytes on the wire per
 * block byte.
 */
@Fork(value = 1, jvmArgsAppend = {"-Xmx2g", "-XX:MaxDirectMemorySize=4g"})
@Warmup(iterations = 5, time = 4)
@Measurement(iterations = 5, time = 3)
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class WireCodecBenchmark {

  static final int KEYS = 16;

  @Param({"262144", "2097152"})
  public int blockBytes;

  @Param({"kv_prose_bf16"})
  public String data;

  @Param({"BYTE_SHUFFLE_2"})
  public Filter filter;

  /** Where the shared KV tensors are, relative to the working directory. */
  @Param({"../shared/data/kv"})
  public String dataDir;

  private ChildProcess server;
  private RemoteTier plain;
  private RemoteTier coded;
  private final List<BlockKey> keys = new ArrayList<>();
  private ByteBuffer block;
  private ByteBuffer dst;
  private int next;

  @Setup(Level.Trial)
  public void start() throws IOException {
    String jar = System.getProperty("kvcache.server.jar", "kvcache-server/target/kvcache-server.jar");
    server = ChildProcess.start("kvcache-server", List.of("java", "-XX:MaxDirectMemorySize=2g",
        "-Dmicronaut.server.port={port}", "-Dkvcache.s3.enabled=false", "-Dkvcache.cache.ram-bytes=1GiB",
        "-Dkvcache.cache.disk-dir=", "-Dkvcache.wire-codec=lz4",
        "-Dkvcache.wire-codec-filter=" + filter.name().toLowerCase(Locale.ROOT), "-jar", jar));
    BlockCodec codec = BlockCodec.builder().filter(filter).build();
    plain = new RemoteTier(RemoteTierConfig.builder().server("127.0.0.1", server.port)
        .maxBlockBytes(blockBytes).build());
    coded = new RemoteTier(RemoteTierConfig.builder().server("127.0.0.1", server.port)
        .maxBlockBytes(blockBytes).wireCodec(codec).build());
    block = Blocks.kvTensors(dataDir, data, blockBytes);
    dst = ByteBuffer.allocateDirect(blockBytes);
    for (int i = 0; i < KEYS; i++) {
      BlockKey key = BlockKey.of(0x7763L, i);
      keys.add(key);
      if (plain.put(key, block.duplicate()) != PutStatus.STORED) {
        throw new IllegalStateException("the server did not store block " + i);
      }
    }
    ByteBuffer encoded = ByteBuffer.allocateDirect((int) codec.maxEncodedLength(blockBytes));
    System.out.printf("%nwire: data=%s filter=%s block=%d encoded/raw=%.4f%n", data, filter,
        blockBytes, (double) codec.encode(block.duplicate(), encoded) / blockBytes);
  }

  @TearDown(Level.Trial)
  public void stop() throws InterruptedException {
    plain.close();
    coded.close();
    server.close();
  }

  private BlockKey key() {
    return keys.get(next++ & (KEYS - 1));
  }

  private int get(RemoteTier tier) {
    dst.clear();
    if (tier.getInto(key(), dst) != GetStatus.HIT) {
      throw new IllegalStateException("miss");
    }
    return dst.position();
  }

  @Benchmark
  public int plainGet() {
    return get(plain);
  }

  @Benchmark
  public int codedGet() {
    return get(coded);
  }

  @Benchmark
  public PutStatus plainPut() {
    return plain.put(key(), block.duplicate());
  }

  @Benchmark
  public PutStatus codedPut() {
    return coded.put(key(), block.duplicate());
  }
}
