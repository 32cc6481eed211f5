package dev.kvcache.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.Collection;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs every benchmark once, briefly and in-process, on a small working set, so a benchmark that
 * no longer builds, sets up or runs fails the test suite. The figures are meaningless; real runs
 * use {@code kvcache-bench/run-benchmarks.sh}.
 */
class BenchmarkSmokeTest {

  private static final Class<?>[] BENCHMARKS = {
    RamTierBenchmark.class,
    RamTierChurnBenchmark.class,
    PeerBenchmark.class,
    MemoryCopyBenchmark.class,
    CodecBenchmark.class,
    FilterBenchmark.class,
    ChecksumBenchmark.class,
    ZstdReferenceBenchmark.class,
    DiskReopenBenchmark.class,
    DiskThroughputBenchmark.class,
    DiskColdReadBenchmark.class,
    DiskPeerBenchmark.class,
    DiskPutLatencyBenchmark.class,
    DiskChurnBenchmark.class,
    TieredCacheBenchmark.class
  };

  @Test
  void everyBenchmarkRunsOnceAndScores() throws RunnerException {
    Options options =
        new OptionsBuilder()
            .include("dev\\.kvcache\\.bench\\.(RamTier|RamTierChurn|Peer|MemoryCopy|Codec|Filter|Checksum|ZstdReference|DiskReopen|DiskThroughput|DiskColdRead|DiskPeer|DiskPutLatency|DiskChurn|TieredCache)Benchmark\\.")
            .forks(0)
            .warmupIterations(0)
            .measurementIterations(1)
            .measurementTime(TimeValue.milliseconds(50))
            .param("blockSizeBytes", "65536")
            .param("workingSetBytes", "1048576")
            .param("regionBytes", "1048576")
            .param("capacityBytes", "16777216")
            .param("chunkSizeBytes", "262144")
            .param("data", "kv_prose_bf16")
            .param("codecThreads", "2")
            .param("level", "1")
            .param("blocks", "2000")
            .param("dropPageCache", "false") // needs root; the cold-read set-up runs without it
            .shouldFailOnError(true)
            .build();

    Collection<RunResult> results = new Runner(options).run();

    Set<String> ran = new TreeSet<>();
    for (RunResult result : results) {
      assertThat(result.getPrimaryResult().getScore())
          .as(result.getParams().getBenchmark())
          .isPositive();
      ran.add(result.getParams().getBenchmark());
    }
    assertThat(ran).containsAll(declaredBenchmarks());
  }

  private static Set<String> declaredBenchmarks() {
    return Arrays.stream(BENCHMARKS)
        .flatMap(c -> Arrays.stream(c.getDeclaredMethods()))
        .filter(m -> m.isAnnotationPresent(Benchmark.class))
        .map(BenchmarkSmokeTest::name)
        .collect(Collectors.toCollection(TreeSet::new));
  }

  private static String name(Method m) {
    return m.getDeclaringClass().getName() + "." + m.getName();
  }
}
