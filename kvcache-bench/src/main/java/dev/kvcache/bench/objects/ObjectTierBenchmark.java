package dev.kvcache.bench.objects;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.Namespace;
import dev.kvcache.PutStatus;
import dev.kvcache.s3.S3Tier;
import dev.kvcache.s3.S3TierConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
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
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.runner.IterationType;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.core.async.AsyncResponseTransformer;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3AsyncClient;

/**
 * The object tier's PUT and GET beside the AWS SDK's stock clients moving the same bytes to the
 * same S3 server in the same run: the SDK's default asynchronous client (Netty) and its CRT-based
 * S3 client, each used as their documentation shows (bytes in a {@code byte[]}, answers gathered
 * with {@code toBytes()}), with request checksums only when required. The tier uploads straight
 * from a direct buffer with its CRC32C and reads into one, checking it, over the SDK's Netty HTTP
 * client ({@code tier}) or the CRT's ({@code tier-crt}).
 *
 * <p>Needs a running S3-compatible server: {@code -Dkvcache.bench.s3.endpoint} (and {@code
 * .bucket}, {@code .access-key}, {@code .secret-key}); {@code run-object-tier-benchmarks.sh}
 * starts rclone over a tmpfs. With {@code -Dkvcache.bench.cpu.out=<file>}, each trial appends a
 * JSON line with the CPU seconds the JVM spent (all threads) and the bytes moved in its
 * measurement iterations.
 */
@Fork(value = 1, jvmArgsAppend = {"-Xmx2g", "-XX:MaxDirectMemorySize=4g"})
@Warmup(iterations = 3, time = 3)
@Measurement(iterations = 5, time = 3)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class ObjectTierBenchmark {

  private static final Namespace NS = Namespace.of("object-tier-bench", "bf16", "tp0of1");
  /** Bytes of objects read in rotation by the GETs, per client and size. */
  private static final long GET_SET_BYTES = 256L << 20;

  /** How a client moves one block. */
  interface Mover extends AutoCloseable {
    void put(int n, Block block);

    void get(int n, Block block);

    @Override
    void close();
  }

  /** The server, the client under test and the objects it reads. */
  @State(Scope.Benchmark)
  public static class Store {
    @Param({"262144", "2097152", "33554432"})
    public int blockBytes;

    @Param({"tier", "tier-crt", "sdk-netty", "sdk-crt"})
    public String client;

    Mover mover;
    int keys;
    final AtomicInteger next = new AtomicInteger();
    final AtomicLong bytes = new AtomicLong();
    private long cpuStart;
    private long bytesStart;
    private double cpuSeconds;
    private long measuredBytes;
    private String benchmark;
    private int threads;

    @Setup(Level.Trial)
    public void open(BenchmarkParams params) {
      benchmark = params.getBenchmark();
      threads = params.getThreads();
      keys = (int) Math.max(4, Math.min(64, GET_SET_BYTES / blockBytes));
      String endpoint = System.getProperty("kvcache.bench.s3.endpoint");
      if (endpoint == null) {
        throw new IllegalStateException("-Dkvcache.bench.s3.endpoint is not set: start an S3 "
            + "server (run-object-tier-benchmarks.sh does)");
      }
      String bucket = System.getProperty("kvcache.bench.s3.bucket", "bench");
      String access = System.getProperty("kvcache.bench.s3.access-key", "bench-access");
      String secret = System.getProperty("kvcache.bench.s3.secret-key", "bench-secret-key");
      String prefix = "bench-" + client + "-" + blockBytes + "/";
      mover = switch (client) {
        case "tier" -> new TierMover(URI.create(endpoint), bucket, access, secret, prefix,
            blockBytes, S3TierConfig.HttpClient.NETTY);
        case "tier-crt" -> new TierMover(URI.create(endpoint), bucket, access, secret, prefix,
            blockBytes, S3TierConfig.HttpClient.CRT);
        case "sdk-netty" -> new SdkMover(S3AsyncClient.builder(), URI.create(endpoint), bucket,
            access, secret, prefix);
        case "sdk-crt" -> new SdkMover(null, URI.create(endpoint), bucket, access, secret, prefix);
        default -> throw new IllegalArgumentException("unknown client " + client);
      };
      Block block = new Block(blockBytes);
      for (int i = 0; i < keys; i++) {
        mover.put(i, block);
      }
    }

    @Setup(Level.Iteration)
    public void startIteration(IterationParams params) {
      if (params.getType() == IterationType.MEASUREMENT) {
        cpuStart = cpuNanos();
        bytesStart = bytes.get();
      } else {
        cpuStart = -1;
      }
    }

    @TearDown(Level.Iteration)
    public void endIteration() {
      if (cpuStart >= 0) {
        cpuSeconds += (cpuNanos() - cpuStart) / 1e9;
        measuredBytes += bytes.get() - bytesStart;
      }
    }

    @TearDown(Level.Trial)
    public void close() throws IOException {
      mover.close();
      String out = System.getProperty("kvcache.bench.cpu.out");
      if (out != null && measuredBytes > 0) {
        String line = String.format(java.util.Locale.ROOT,
            "{\"benchmark\":\"%s\",\"client\":\"%s\",\"blockBytes\":%d,\"threads\":%d,"
                + "\"cpuSeconds\":%.4f,\"bytes\":%d,\"cpuSecondsPerGiB\":%.4f}%n", benchmark,
            client, blockBytes, threads, cpuSeconds, measuredBytes,
            cpuSeconds / (measuredBytes / (double) (1L << 30)));
        Files.writeString(Path.of(out), line, StandardCharsets.UTF_8,
            StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      }
    }

    private static long cpuNanos() {
      return ((com.sun.management.OperatingSystemMXBean)
          ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }
  }

  /** A block of random bytes, as a direct buffer and as a heap copy, and a buffer to read into. */
  static final class Block {
    final ByteBuffer direct;
    final byte[] heap;
    final ByteBuffer into;

    Block(int length) {
      heap = new byte[length];
      new Random(length).nextBytes(heap);
      direct = ByteBuffer.allocateDirect(length).put(heap).flip();
      into = ByteBuffer.allocateDirect(length);
    }
  }

  /** Each thread's block, made once at the trial's size. */
  @State(Scope.Thread)
  public static class ThreadBlock {
    Block block;

    @Setup(Level.Trial)
    public void make(Store store) {
      block = new Block(store.blockBytes);
    }
  }

  @Benchmark
  public void put(Store store, ThreadBlock t) {
    store.mover.put(store.keys + Math.floorMod(store.next.getAndIncrement(), store.keys), t.block);
    store.bytes.addAndGet(store.blockBytes);
  }

  @Benchmark
  public void get(Store store, ThreadBlock t) {
    store.mover.get(Math.floorMod(store.next.getAndIncrement(), store.keys), t.block);
    store.bytes.addAndGet(store.blockBytes);
  }

  /** The object tier: uploads from the direct buffer, reads into one and checks the CRC32C. */
  static final class TierMover implements Mover {
    private final S3Tier tier;

    TierMover(URI endpoint, String bucket, String access, String secret, String prefix,
        int blockBytes, S3TierConfig.HttpClient http) {
      try {
        tier = S3Tier.open(S3TierConfig.builder(bucket, 1L << 40).endpoint(endpoint)
            .httpClient(http)
            .credentials(access, secret).prefix(prefix).maxBlockBytes(blockBytes)
            .listInterval(Duration.ZERO).build());
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    private static BlockKey key(int n) {
      return BlockKey.ofRaw(NS, String.format("object-tier-bench-%08d", n));
    }

    @Override
    public void put(int n, Block block) {
      if (tier.put(key(n), block.direct.duplicate()) != PutStatus.STORED) {
        throw new IllegalStateException("put " + n + " not stored: " + tier.health());
      }
    }

    @Override
    public void get(int n, Block block) {
      if (tier.getInto(key(n), block.into.clear()) != GetStatus.HIT) {
        throw new IllegalStateException("get " + n + " missed: " + tier.health());
      }
    }

    @Override
    public void close() {
      tier.close();
    }
  }

  /** An SDK client used as documented: a {@code byte[]} up, {@code toBytes()} down. */
  static final class SdkMover implements Mover {
    private final S3AsyncClient s3;
    private final String bucket;
    private final String prefix;

    /** @param builder the default client's builder; null for the CRT-based S3 client */
    SdkMover(software.amazon.awssdk.services.s3.S3AsyncClientBuilder builder, URI endpoint,
        String bucket, String access, String secret, String prefix) {
      StaticCredentialsProvider credentials =
          StaticCredentialsProvider.create(AwsBasicCredentials.create(access, secret));
      this.s3 = builder != null
          ? builder.endpointOverride(endpoint).region(Region.US_EAST_1).forcePathStyle(true)
              .credentialsProvider(credentials)
              .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
              .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED).build()
          : S3AsyncClient.crtBuilder().endpointOverride(endpoint).region(Region.US_EAST_1)
              .forcePathStyle(true).credentialsProvider(credentials)
              .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
              .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED).build();
      this.bucket = bucket;
      this.prefix = prefix;
    }

    @Override
    public void put(int n, Block block) {
      s3.putObject(b -> b.bucket(bucket).key(prefix + n), AsyncRequestBody.fromBytes(block.heap))
          .join();
    }

    @Override
    public void get(int n, Block block) {
      byte[] got = s3.getObject(b -> b.bucket(bucket).key(prefix + n),
          AsyncResponseTransformer.toBytes()).join().asByteArrayUnsafe();
      if (got.length != block.heap.length) {
        throw new IllegalStateException("get " + n + " returned " + got.length + " bytes");
      }
    }

    @Override
    public void close() {
      s3.close();
    }
  }
}
