package dev.kvcache.bench.trace;

import dev.kvcache.KvCache;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.function.LongFunction;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * Replays request traces against the cache and two references at several capacities, and reports
 * the block hit ratio of each: exact LRU, LRU that evicts orphaned chain tails first, LRU that
 * knows which blocks are used again, W-TinyLFU at fixed windows, the clairvoyant ceiling (Belady's
 * MIN with bypass), and kvcache's RAM tier through its public API.
 *
 * <pre>
 * java -XX:MaxDirectMemorySize=2g -cp kvcache-bench/target/benchmarks.jar \
 *     dev.kvcache.bench.trace.TraceReplay ../shared/data/traces/*.jsonl.zst \
 *     --out docs/results/trace-hit-ratio.csv
 * </pre>
 */
@Command(name = "trace-replay", mixinStandardHelpOptions = true,
    description = "Hit ratio against capacity on Mooncake-style request traces.")
public final class TraceReplay implements Callable<Integer> {

  @Parameters(paramLabel = "TRACE", arity = "1..*",
      description = "trace files (.jsonl or .jsonl.zst), one request with hash_ids per line")
  List<Path> traces;

  @Option(names = "--capacities", split = ",", defaultValue = "1000,5000,10000,30000,50000,0",
      description = "capacities in blocks; 0 is unlimited (default: ${DEFAULT-VALUE})")
  List<Long> capacities;

  /** Window fractions of the W-TinyLFU model: Caffeine's starting 1% up to nearly all LRU. */
  static final double[] WINDOWS = {0.01, 0.2, 0.5, 0.99};

  @Option(names = "--out", description = "CSV file for the results")
  Path out;

  /** One row: a model's hit ratio on a trace at a capacity (0 = unlimited). */
  record Result(String trace, long capacity, String model, long hits, long accesses) {
    double ratio() {
      return accesses == 0 ? 0 : (double) hits / accesses;
    }
  }

  public static void main(String[] args) {
    System.exit(new CommandLine(new TraceReplay()).execute(args));
  }

  @Override
  public Integer call() throws IOException {
    List<Result> results = new ArrayList<>();
    for (Path file : traces) {
      MooncakeTrace trace = MooncakeTrace.load(file);
      int distinct = trace.distinctBlocks();
      System.out.printf(Locale.ROOT, "%s: %d requests, %d block accesses, %d distinct blocks, "
          + "%d used once; median reuse distance %d block accesses%n",
          trace.name(), trace.requests().length, trace.blockAccesses(), distinct,
          trace.blocksUsedOnce(), trace.medianReuseDistance());
      System.out.printf(Locale.ROOT, "%10s %8s %12s %11s %13s %8s %8s %11s%n",
          "capacity", "LRU", "LRU-orphans", "LRU-oracle", "WTinyLFU-best", "kvcache", "ceiling",
          "gap closed");
      for (long capacity : capacities) {
        long blocks = capacity == 0 ? distinct : capacity;
        Result lru = replay(trace, capacity, "lru", c -> new LruModel(blocks));
        Result orphans = replay(trace, capacity, "lru-orphans-first",
            c -> new OrphanFirstLruModel(blocks));
        Result oracle = replay(trace, capacity, "lru-reuse-oracle",
            c -> new ReuseOracleLruModel(trace, blocks));
        Result bestWindow = null;
        for (double w : WINDOWS) {
          Result r = replay(trace, capacity, "wtinylfu-window-" + w,
              c -> new WindowTinyLfuModel(blocks, w));
          results.add(r);
          bestWindow = bestWindow == null || r.hits() > bestWindow.hits() ? r : bestWindow;
        }
        Result ceiling = replay(trace, capacity, "ceiling", c -> new BeladyModel(trace, blocks));
        Result ours = replay(trace, capacity, "kvcache", c -> kvcache(blocks));
        results.add(lru);
        results.add(orphans);
        results.add(oracle);
        results.add(ceiling);
        results.add(ours);
        double gap = ceiling.ratio() - lru.ratio();
        System.out.printf(Locale.ROOT, "%10s %8.4f %12.4f %11.4f %13.4f %8.4f %8.4f %11s%n",
            capacity == 0 ? "unlimited" : Long.toString(capacity), lru.ratio(), orphans.ratio(),
            oracle.ratio(), bestWindow.ratio(), ours.ratio(),
            ceiling.ratio(),
            gap < 1e-9 ? "-" : String.format(Locale.ROOT, "%.2f", (ours.ratio() - lru.ratio()) / gap));
      }
    }
    if (out != null) {
      writeCsv(out, results);
      System.out.println("wrote " + out);
    }
    return 0;
  }

  static PrefixCacheModel kvcache(long blocks) {
    return new KvCacheModel(KvCache.builder()
        .ramBytes(KvCacheModel.ramBytesFor(blocks))
        .maxBlockBytes(KvCacheModel.BLOCK_BYTES)
        .build());
  }

  /** Serves every request of the trace in order, counting leading blocks found. */
  static Result replay(MooncakeTrace trace, long capacity, String model,
      LongFunction<PrefixCacheModel> factory) {
    long hits = 0;
    long accesses = 0;
    try (PrefixCacheModel cache = factory.apply(capacity)) {
      for (int[] ids : trace.requests()) {
        hits += cache.serve(ids);
        accesses += ids.length;
      }
    }
    return new Result(trace.name(), capacity, model, hits, accesses);
  }

  private static void writeCsv(Path file, List<Result> results) throws IOException {
    if (file.getParent() != null) {
      Files.createDirectories(file.getParent());
    }
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file))) {
      w.println("trace,capacity_blocks,model,hits,accesses,hit_ratio");
      for (Result r : results) {
        w.printf(Locale.ROOT, "%s,%d,%s,%d,%d,%.6f%n",
            r.trace(), r.capacity(), r.model(), r.hits(), r.accesses(), r.ratio());
      }
    }
  }
}
