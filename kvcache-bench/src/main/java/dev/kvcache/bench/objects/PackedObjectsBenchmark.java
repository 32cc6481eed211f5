package dev.kvcache.bench.objects;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.core.async.AsyncResponseTransformer;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3AsyncClient;

/**
 * Small blocks as one object each (what the object tier does) against blocks packed {@value
 * #RUN} to an object and read with ranged GETs, for a run of {@value #RUN} consecutive blocks of
 * a prompt: storing the run ({@code putRun}: {@value #RUN} PUTs at once, or one PUT of the packed
 * object), reading it back ({@code getRun}: {@value #RUN} GETs at once, or one ranged GET of the
 * whole run) and reading one block of it ({@code getOne}: a GET, or a ranged GET of its bytes).
 * Each operation counts once; bytes per second are the score times the bytes it moves, and the
 * requests per GiB follow from the layout (one request per block, or per run).
 *
 * <p>Needs a running S3-compatible server, as {@link ObjectTierBenchmark} does ({@code
 * -Dkvcache.bench.s3.endpoint}); {@code run-object-tier-benchmarks.sh} starts rclone over a tmpfs
 * ({@code BENCHMARK=PackedObjectsBenchmark}).
 */
@Fork(value = 1, jvmArgsAppend = {"-Xmx2g"})
@Warmup(iterations = 3, time = 3)
@Measurement(iterations = 5, time = 3)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class PackedObjectsBenchmark {

  /** Blocks in a run, and in a packed object. */
  static final int RUN = 16;
  /** Runs written before the measurement, read in rotation. */
  static final int RUNS = 16;

  /** The client, the layout and the runs it reads. */
  @State(Scope.Benchmark)
  public static class Store {
    @Param({"65536", "262144"})
    public int blockBytes;

    @Param({"per-block", "packed"})
    public String layout;

    S3AsyncClient s3;
    String bucket;
    String prefix;
    byte[] block;
    byte[] packed;
    final AtomicInteger next = new AtomicInteger();

    @Setup(Level.Trial)
    public void open() {
      String endpoint = System.getProperty("kvcache.bench.s3.endpoint");
      if (endpoint == null) {
        throw new IllegalStateException("-Dkvcache.bench.s3.endpoint is not set: start an S3 "
            + "server (run-object-tier-benchmarks.sh does)");
      }
      bucket = System.getProperty("kvcache.bench.s3.bucket", "bench");
      s3 = S3AsyncClient.builder().endpointOverride(URI.create(endpoint))
          .region(Region.US_EAST_1).forcePathStyle(true)
          .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(
              System.getProperty("kvcache.bench.s3.access-key", "bench-access"),
              System.getProperty("kvcache.bench.s3.secret-key", "bench-secret-key"))))
          .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
          .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED).build();
      prefix = "packed-bench-" + layout + "-" + blockBytes + "/";
      block = new byte[blockBytes];
      new Random(blockBytes).nextBytes(block);
      packed = new byte[RUN * blockBytes];
      for (int i = 0; i < RUN; i++) {
        System.arraycopy(block, 0, packed, i * blockBytes, blockBytes);
      }
      for (int r = 0; r < RUNS; r++) {
        putRun(r);
      }
    }

    @TearDown(Level.Trial)
    public void close() {
      s3.close();
    }

    void putRun(int run) {
      if (layout.equals("packed")) {
        s3.putObject(b -> b.bucket(bucket).key(prefix + run), AsyncRequestBody.fromBytes(packed))
            .join();
        return;
      }
      List<CompletableFuture<?>> puts = new ArrayList<>(RUN);
      for (int i = 0; i < RUN; i++) {
        String key = prefix + run + "/" + i;
        puts.add(s3.putObject(b -> b.bucket(bucket).key(key), AsyncRequestBody.fromBytes(block)));
      }
      CompletableFuture.allOf(puts.toArray(CompletableFuture[]::new)).join();
    }

    long getRun(int run) {
      if (layout.equals("packed")) {
        return get(prefix + run, "bytes=0-" + (RUN * (long) blockBytes - 1));
      }
      List<CompletableFuture<Integer>> gets = new ArrayList<>(RUN);
      for (int i = 0; i < RUN; i++) {
        String key = prefix + run + "/" + i;
        gets.add(s3.getObject(b -> b.bucket(bucket).key(key), AsyncResponseTransformer.toBytes())
            .thenApply(r -> r.asByteArrayUnsafe().length));
      }
      long bytes = 0;
      for (CompletableFuture<Integer> g : gets) {
        bytes += g.join();
      }
      return check(bytes, RUN);
    }

    long getOne(int run, int index) {
      if (layout.equals("packed")) {
        long from = (long) index * blockBytes;
        return get(prefix + run, "bytes=" + from + "-" + (from + blockBytes - 1));
      }
      return check(s3.getObject(b -> b.bucket(bucket).key(prefix + run + "/" + index),
          AsyncResponseTransformer.toBytes()).join().asByteArrayUnsafe().length, 1);
    }

    private long get(String key, String range) {
      long bytes = s3.getObject(b -> b.bucket(bucket).key(key).range(range),
          AsyncResponseTransformer.toBytes()).join().asByteArrayUnsafe().length;
      long blocks = (Long.parseLong(range.substring(range.indexOf('-') + 1))
          - Long.parseLong(range.substring(6, range.indexOf('-'))) + 1) / blockBytes;
      return check(bytes, (int) blocks);
    }

    private long check(long bytes, int blocks) {
      if (bytes != (long) blocks * blockBytes) {
        throw new IllegalStateException("read " + bytes + " bytes, not " + blocks + " blocks");
      }
      return bytes;
    }
  }

  @Benchmark
  public void putRun(Store store) {
    store.putRun(Math.floorMod(store.next.getAndIncrement(), RUNS));
  }

  @Benchmark
  public long getRun(Store store) {
    return store.getRun(Math.floorMod(store.next.getAndIncrement(), RUNS));
  }

  @Benchmark
  public long getOne(Store store) {
    int n = store.next.getAndIncrement();
    return store.getOne(Math.floorMod(n, RUNS), Math.floorMod(n / RUNS, RUN));
  }
}
