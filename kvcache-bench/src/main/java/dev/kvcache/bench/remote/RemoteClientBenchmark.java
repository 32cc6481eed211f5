package dev.kvcache.bench.remote;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.client.RemoteTier;
import dev.kvcache.client.RemoteTierConfig;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.tiered.Durability;
import dev.kvcache.tiered.TieredCache;
import dev.kvcache.tiered.TieredCacheConfig;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
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
import redis.clients.jedis.Jedis;

/**
 * The Java client ({@link RemoteTier}) against a kvcache-server child process, beside Jedis
 * against a redis-server child process, in the same run: GET and PUT (SET) of one block size,
 * from as many threads as JMH runs ({@code -t}); eight blocks in one call (batch GET beside
 * MGET; run for the smaller sizes only); and a lookup of 128 keys, also pinned, and both through a
 * tiered cache whose RAM tier lacks the keys (the server being its lower tier). Needs the server jar
 * ({@code -Dkvcache.server.jar}, default {@code kvcache-server/target/kvcache-server.jar}) and
 * {@code redis-server} on the PATH. Each trial starts a fresh server, whose JIT needs the long
 * warm-up: with 4 s of it, GET ran at half its warmed-up speed.
 */
@Fork(value = 1, jvmArgsAppend = {"-Xmx2g", "-XX:MaxDirectMemorySize=4g"})
@Warmup(iterations = 5, time = 5)
@Measurement(iterations = 4, time = 3)
public class RemoteClientBenchmark {

  static final int KEYS = 16;
  static final int BATCH = 8;

  /** The servers and the blocks, shared by all threads. */
  @State(Scope.Benchmark)
  public static class Servers {
    @Param({"262144", "2097152", "33554432"})
    public int blockBytes;

    ChildProcess kvcache;
    ChildProcess redis;
    RemoteTier remote;
    final List<BlockKey> keys = new ArrayList<>();
    final List<BlockKey> lookupKeys = new ArrayList<>();
    byte[] value;

    @Setup(Level.Trial)
    public void start() throws IOException {
      String jar = System.getProperty("kvcache.server.jar", "kvcache-server/target/kvcache-server.jar");
      kvcache = ChildProcess.start("kvcache-server", List.of("java", "-XX:MaxDirectMemorySize=6g",
          "-Dmicronaut.server.port={port}", "-Dkvcache.s3.enabled=false", "-Dkvcache.cache.ram-bytes=4GiB",
          "-Dkvcache.cache.disk-dir=", "-jar", jar));
      redis = ChildProcess.start("redis-server", List.of("redis-server", "--port", "{port}",
          "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
          "--proto-max-bulk-len", "64mb"));
      remote = new RemoteTier(RemoteTierConfig.builder().server("127.0.0.1", kvcache.port)
          .maxBlockBytes(blockBytes).build());
      value = new byte[blockBytes];
      ThreadLocalRandom.current().nextBytes(value);
      ByteBuffer src = ByteBuffer.allocateDirect(blockBytes).put(value).flip();
      try (Jedis jedis = new Jedis("127.0.0.1", redis.port)) {
        for (int i = 0; i < KEYS; i++) {
          BlockKey key = BlockKey.of(0x6b76L, i);
          keys.add(key);
          if (remote.put(key, src) != PutStatus.STORED) {
            throw new IllegalStateException("the server did not store block " + i);
          }
          jedis.set(key.toBytes(), value);
        }
      }
      ByteBuffer small = ByteBuffer.allocateDirect(64);
      small.put(0, (byte) 1);
      for (int i = 0; i < 128; i++) {
        BlockKey key = BlockKey.of(0x6c6bL, i);
        lookupKeys.add(key);
        if (i < 64) {
          remote.put(key, small.duplicate());
        }
      }
    }

    @TearDown(Level.Trial)
    public void stop() throws InterruptedException {
      remote.close();
      kvcache.close();
      redis.close();
    }
  }

  /** An empty RAM tier over the same server, not promoting: every lookup goes to the server. */
  @State(Scope.Benchmark)
  public static class Tiered {
    TieredCache cache;

    @Setup(Level.Trial)
    public void open(Servers servers) {
      cache = new TieredCache(RamTierConfig.ofCapacity(64 << 20),
          new RemoteTier(RemoteTierConfig.builder().server("127.0.0.1", servers.kvcache.port).build()),
          new TieredCacheConfig(TieredCacheConfig.DEFAULT_SPILL_QUEUE_BLOCKS,
              TieredCacheConfig.DEFAULT_SPILL_QUEUE_WAIT, false, false, Durability.RAM_FIRST));
    }

    @TearDown(Level.Trial)
    public void close() {
      cache.close();
    }
  }

  /** Per thread: a Redis connection and a destination buffer. */
  @State(Scope.Thread)
  public static class Client {
    Jedis jedis;
    ByteBuffer dst;
    ByteBuffer src;
    final List<ByteBuffer> batchDsts = new ArrayList<>();
    int next;

    @Setup(Level.Trial)
    public void open(Servers servers) {
      jedis = new Jedis("127.0.0.1", servers.redis.port);
      dst = ByteBuffer.allocateDirect(servers.blockBytes);
      src = ByteBuffer.allocateDirect(servers.blockBytes).put(servers.value).flip();
    }

    @TearDown(Level.Trial)
    public void close() {
      jedis.close();
    }

    BlockKey key(Servers servers) {
      return servers.keys.get(next++ & (KEYS - 1));
    }

    /** The next eight keys, in turn the first and the second half of the sixteen. */
    List<BlockKey> batchKeys(Servers servers) {
      int from = (next++ & 1) * BATCH;
      return servers.keys.subList(from, from + BATCH);
    }
  }

  @Benchmark
  @BenchmarkMode(Mode.Throughput)
  @OutputTimeUnit(TimeUnit.SECONDS)
  public int kvcacheGet(Servers servers, Client client) {
    client.dst.clear();
    if (servers.remote.getInto(client.key(servers), client.dst) != GetStatus.HIT) {
      throw new IllegalStateException("miss");
    }
    return client.dst.position();
  }

  @Benchmark
  @BenchmarkMode(Mode.Throughput)
  @OutputTimeUnit(TimeUnit.SECONDS)
  public PutStatus kvcachePut(Servers servers, Client client) {
    return servers.remote.put(client.key(servers), client.src);
  }

  @Benchmark
  @BenchmarkMode(Mode.Throughput)
  @OutputTimeUnit(TimeUnit.SECONDS)
  public int redisGet(Servers servers, Client client) {
    return client.jedis.get(client.key(servers).toBytes()).length;
  }

  @Benchmark
  @BenchmarkMode(Mode.Throughput)
  @OutputTimeUnit(TimeUnit.SECONDS)
  public String redisSet(Servers servers, Client client) {
    return client.jedis.set(client.key(servers).toBytes(), servers.value);
  }

  /** Eight blocks in one call: batch GETs (one per server). */
  @Benchmark
  @BenchmarkMode(Mode.Throughput)
  @OutputTimeUnit(TimeUnit.SECONDS)
  public int kvcacheGetBatch8(Servers servers, Client client) {
    List<BlockKey> keys = client.batchKeys(servers);
    while (client.batchDsts.size() < BATCH) { // allocated on first use: not for 32 MiB blocks
      client.batchDsts.add(ByteBuffer.allocateDirect(servers.blockBytes));
    }
    for (ByteBuffer b : client.batchDsts) {
      b.clear();
    }
    for (GetStatus status : servers.remote.getAllInto(keys, client.batchDsts)) {
      if (status != GetStatus.HIT) {
        throw new IllegalStateException("miss");
      }
    }
    return client.batchDsts.get(BATCH - 1).position();
  }

  /** The same eight blocks from Redis with one MGET. */
  @Benchmark
  @BenchmarkMode(Mode.Throughput)
  @OutputTimeUnit(TimeUnit.SECONDS)
  public int redisMget8(Servers servers, Client client) {
    List<BlockKey> keys = client.batchKeys(servers);
    byte[][] raw = new byte[BATCH][];
    for (int i = 0; i < BATCH; i++) {
      raw[i] = keys.get(i).toBytes();
    }
    return client.jedis.mget(raw).get(BATCH - 1).length;
  }

  /** Latency of a lookup of 128 keys, the first 64 present. */
  @Benchmark
  @BenchmarkMode(Mode.SampleTime)
  @OutputTimeUnit(TimeUnit.MICROSECONDS)
  public int kvcacheLookup128(Servers servers) {
    return found(servers.remote.lookupPrefix(servers.lookupKeys));
  }

  /** The same lookup, pinning the 64 blocks found (then let go without reading them). */
  @Benchmark
  @BenchmarkMode(Mode.SampleTime)
  @OutputTimeUnit(TimeUnit.MICROSECONDS)
  public int kvcachePin128(Servers servers) {
    try (PrefixPin pin = servers.remote.pinPrefix(servers.lookupKeys, Duration.ofSeconds(5))) {
      return found(pin.blocks());
    }
  }

  /** The lookup through a tiered cache whose RAM tier lacks the keys. */
  @Benchmark
  @BenchmarkMode(Mode.SampleTime)
  @OutputTimeUnit(TimeUnit.MICROSECONDS)
  public int tieredLookup128(Servers servers, Tiered tiered) {
    return found(tiered.cache.lookupPrefix(servers.lookupKeys));
  }

  /** The pinned lookup through a tiered cache whose RAM tier lacks the keys. */
  @Benchmark
  @BenchmarkMode(Mode.SampleTime)
  @OutputTimeUnit(TimeUnit.MICROSECONDS)
  public int tieredPin128(Servers servers, Tiered tiered) {
    try (PrefixPin pin = tiered.cache.pinPrefix(servers.lookupKeys, Duration.ofSeconds(5))) {
      return found(pin.blocks());
    }
  }

  private static int found(int present) {
    if (present != 64) {
      throw new IllegalStateException("lookup found " + present);
    }
    return present;
  }
}
