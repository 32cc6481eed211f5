package dev.kvcache.bench.trace;

import dev.kvcache.ram.RamPolicy;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.tiered.KvCacheBuilder;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

/**
 * Replays request traces against the cache and references at several capacities, and reports the
 * block hit ratio of each: exact LRU, LRU that evicts orphaned chain tails first, LRU that leaves a
 * request's last (partial) block out, LRU that knows which blocks are used again, W-TinyLFU at
 * fixed windows, S3-FIFO, SIEVE, ARC, the clairvoyant ceiling (Belady's MIN with bypass), and
 * kvcache's RAM tier through its public API, under each {@link RamPolicy}. With {@code
 * --copies n}, each trace is replayed n times in a row, each copy with block ids of its own (the
 * same workload again, sharing nothing with the copy before), and each copy is reported apart, so
 * that a policy that adapts or decays slowly shows.
 *
 * <pre>
 * java -XX:MaxDirectMemorySize=2g -cp kvcache-bench/target/benchmarks.jar \
 *     dev.kvcache.bench.trace.TraceReplay ../shared/data/traces/*.jsonl.zst \
 *     --out docs/results/traces/trace-hit-ratio.csv
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

  /** The printed table's columns: heading (its width too) and model. */
  private static final String[][] COLUMNS = {
      {"     LRU", "lru"}, {"LRU-orphans", "lru-orphans-first"}, {"LRU-skip-last", "lru-skip-last"},
      {"LRU-oracle", "lru-reuse-oracle"}, {"WTinyLFU-best", "wtinylfu-best"},
      {" S3-FIFO", "s3fifo"}, {"   SIEVE", "sieve"}, {"     ARC", "arc"},
      {" kvcache", "kvcache"}, {"kvcache-WTinyLFU", "kvcache-w-tiny-lfu"},
      {" ceiling", "ceiling"}};

  /** Window fractions of the W-TinyLFU model: Caffeine's starting 1% up to nearly all LRU. */
  static final double[] WINDOWS = {0.01, 0.2, 0.5, 0.99};

  @Option(names = "--copies", defaultValue = "1",
      description = "replay each trace this many times in a row, with fresh block ids per copy "
          + "(default: ${DEFAULT-VALUE})")
  int copies;

  @Option(names = "--out", description = "CSV file for the results")
  Path out;

  /**
   * One row: a model's hits on copy {@code copy} (from 1) of a trace at a capacity (0 = unlimited).
   */
  record Result(String trace, long capacity, String model, int copy, long hits, long accesses) {
    double ratio() {
      return accesses == 0 ? 0 : (double) hits / accesses;
    }
  }

  public static void main(String[] args) {
    System.exit(new CommandLine(new TraceReplay()).execute(args));
  }

  @Override
  public Integer call() throws IOException {
    if (copies < 1) {
      throw new CommandLine.ParameterException(new CommandLine(this),
          "--copies must be at least 1");
    }
    List<Result> results = new ArrayList<>();
    for (Path file : traces) {
      MooncakeTrace one = MooncakeTrace.load(file);
      MooncakeTrace trace = one.repeated(copies);
      int distinct = one.distinctBlocks();
      System.out.printf(Locale.ROOT, "%s: %d requests, %d block accesses, %d distinct blocks, "
          + "%d used once; median reuse distance %d block accesses%s%n",
          one.name(), one.requests().length, one.blockAccesses(), distinct,
          one.blocksUsedOnce(), one.medianReuseDistance(),
          copies > 1 ? "; " + copies + " copies in a row" : "");
      StringBuilder header =
          new StringBuilder(String.format(Locale.ROOT, "%10s %4s", "capacity", "copy"));
      for (String[] column : COLUMNS) {
        header.append(String.format(Locale.ROOT, " %" + column[0].length() + "s", column[0]));
      }
      System.out.println(header.append("  gap closed"));
      for (long capacity : capacities) {
        long blocks = capacity == 0 ? (long) distinct * copies : capacity;
        List<Result[]> rows = new ArrayList<>();
        rows.add(replay(trace, one, capacity, "lru", new LruModel(blocks)));
        rows.add(replay(trace, one, capacity, "lru-orphans-first",
            new OrphanFirstLruModel(blocks)));
        rows.add(replay(trace, one, capacity, "lru-reuse-oracle",
            new ReuseOracleLruModel(trace, blocks)));
        Result[] bestWindow = null;
        for (double w : WINDOWS) {
          Result[] r = replay(trace, one, capacity, "wtinylfu-window-" + w,
              new WindowTinyLfuModel(blocks, w));
          rows.add(r);
          bestWindow = bestWindow == null || hits(r) > hits(bestWindow) ? r : bestWindow;
        }
        rows.add(replay(trace, one, capacity, "lru-skip-last", new LruModel(blocks, true)));
        rows.add(replay(trace, one, capacity, "s3fifo", new S3FifoModel(blocks)));
        rows.add(replay(trace, one, capacity, "sieve", new SieveModel(blocks)));
        rows.add(replay(trace, one, capacity, "arc", new ArcModel(blocks)));
        rows.add(replay(trace, one, capacity, "ceiling", new BeladyModel(trace, blocks)));
        rows.add(replay(trace, one, capacity, "kvcache", kvcache(blocks)));
        rows.add(replay(trace, one, capacity, "kvcache-w-tiny-lfu",
            kvcache(blocks, RamPolicy.W_TINY_LFU)));
        rows.forEach(r -> results.addAll(List.of(r)));
        for (int c = 0; c < copies; c++) {
          StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%10s %4d",
              capacity == 0 ? "unlimited" : Long.toString(capacity), c + 1));
          for (String[] column : COLUMNS) {
            Result r = column[1].equals("wtinylfu-best") ? bestWindow[c] : row(rows, column[1])[c];
            line.append(String.format(Locale.ROOT, " %" + column[0].length() + ".4f", r.ratio()));
          }
          double lru = row(rows, "lru")[c].ratio();
          double gap = row(rows, "ceiling")[c].ratio() - lru;
          line.append(gap < 1e-9 ? "  -" : String.format(Locale.ROOT, "  %.2f",
              (row(rows, "kvcache")[c].ratio() - lru) / gap));
          System.out.println(line);
        }
      }
    }
    if (out != null) {
      writeCsv(out, results);
      System.out.println("wrote " + out);
    }
    return 0;
  }

  private static Result[] row(List<Result[]> rows, String model) {
    return rows.stream().filter(r -> r[0].model().equals(model)).findFirst().orElseThrow();
  }

  private static long hits(Result[] perCopy) {
    long n = 0;
    for (Result r : perCopy) {
      n += r.hits();
    }
    return n;
  }

  static PrefixCacheModel kvcache(long blocks) {
    return kvcache(blocks, RamTierConfig.DEFAULT_POLICY);
  }

  static PrefixCacheModel kvcache(long blocks, RamPolicy policy) {
    return new KvCacheModel(KvCacheBuilder.newBuilder()
        .ramBytes(KvCacheModel.ramBytesFor(blocks))
        .ramPolicy(policy)
        .maxBlockBytes(KvCacheModel.BLOCK_BYTES)
        .build());
  }

  /**
   * Serves every request of {@code trace} (the copies of {@code one} in a row) in order, counting
   * leading blocks found, per copy.
   */
  static Result[] replay(MooncakeTrace trace, MooncakeTrace one, long capacity, String model,
      PrefixCacheModel cache) {
    int perCopy = one.requests().length;
    int copies = trace.requests().length / Math.max(1, perCopy);
    Result[] out = new Result[Math.max(1, copies)];
    try (cache) {
      for (int c = 0; c < out.length; c++) {
        long hits = 0;
        long accesses = 0;
        for (int r = c * perCopy; r < (c + 1) * perCopy; r++) {
          int[] ids = trace.requests()[r];
          hits += cache.serve(ids);
          accesses += ids.length;
        }
        out[c] = new Result(one.name(), capacity, model, c + 1, hits, accesses);
      }
    }
    return out;
  }

  private static void writeCsv(Path file, List<Result> results) throws IOException {
    if (file.getParent() != null) {
      Files.createDirectories(file.getParent());
    }
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file))) {
      w.println("trace,capacity_blocks,model,copy,hits,accesses,hit_ratio");
      for (Result r : results) {
        w.printf(Locale.ROOT, "%s,%d,%s,%d,%d,%d,%.6f%n",
            r.trace(), r.capacity(), r.model(), r.copy(), r.hits(), r.accesses(), r.ratio());
      }
    }
  }
}
