package dev.kvcache.bench.trace;

import dev.kvcache.BlockKey;
import dev.kvcache.KvCache;
import dev.kvcache.Namespace;
import dev.kvcache.tiered.KvCacheBuilder;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * Two tenants of one cache: one replays a request trace while the other floods the cache with
 * blocks used once, {@code --flood-factor} times its quota over the replay; the replaying tenant's
 * hit ratio flooded against its run alone, with quotas ({@link KvCacheBuilder#ramQuota}) and
 * without. Blocks are one 4 KiB granule ({@link KvCacheModel}), so capacities count blocks. The
 * replaying tenant's quota is half the RAM, the flood's a quarter; the rest is the other
 * namespaces'.
 *
 * <pre>
 * java -cp kvcache-bench/target/benchmarks.jar dev.kvcache.bench.trace.QuotaReplay \
 *     ../shared/data/traces/mooncake_conversation_trace.jsonl.zst --ram-blocks 20000 \
 *     --out docs/results/traces/quota-replay.csv
 * </pre>
 */
@Command(name = "quota-replay", mixinStandardHelpOptions = true,
    description = "A tenant's hit ratio while another floods the cache, with quotas and without.")
public final class QuotaReplay implements Callable<Integer> {

  static final Namespace REPLAYED = Namespace.of("replay", "bf16", "v1", "replayed");
  static final Namespace FLOOD = Namespace.of("replay", "bf16", "v1", "flood");

  @Parameters(paramLabel = "TRACE", arity = "1..*",
      description = "trace files (.jsonl or .jsonl.zst), one request with hash_ids per line")
  List<Path> traces;

  @Option(names = "--ram-blocks", defaultValue = "20000",
      description = "RAM's capacity in blocks (default: ${DEFAULT-VALUE})")
  int ramBlocks;

  @Option(names = "--flood-factor", defaultValue = "10",
      description = "blocks the flood puts over the replay, in multiples of its quota "
          + "(default: ${DEFAULT-VALUE})")
  int floodFactor;

  @Option(names = "--out", description = "CSV file for the results")
  Path out;

  /** One tenant's hits over a replay. */
  record Result(String trace, int ramBlocks, boolean quotas, boolean flooded, long accesses,
      long hits) {
    double hitRatio() {
      return (double) hits / accesses;
    }
  }

  public static void main(String[] args) {
    System.exit(new CommandLine(new QuotaReplay()).execute(args));
  }

  @Override
  public Integer call() throws IOException {
    List<Result> results = new ArrayList<>();
    System.out.printf(Locale.ROOT, "%-28s %8s %7s %9s %9s%n", "trace", "RAM", "quotas", "alone",
        "flooded");
    for (Path file : traces) {
      MooncakeTrace trace = MooncakeTrace.load(file);
      for (boolean quotas : new boolean[] {true, false}) {
        Result alone = replay(trace, quotas, false);
        Result flooded = replay(trace, quotas, true);
        results.add(alone);
        results.add(flooded);
        System.out.printf(Locale.ROOT, "%-28s %8d %7s %9.4f %9.4f%n", trace.name(), ramBlocks,
            quotas, alone.hitRatio(), flooded.hitRatio());
      }
    }
    if (out != null) {
      if (out.getParent() != null) {
        Files.createDirectories(out.getParent());
      }
      try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out))) {
        w.println("trace,ram_blocks,quotas,flooded,flood_factor,accesses,hits,hit_ratio");
        for (Result r : results) {
          w.printf(Locale.ROOT, "%s,%d,%s,%s,%d,%d,%d,%.6f%n", r.trace(), r.ramBlocks(),
              r.quotas(), r.flooded(), floodFactor, r.accesses(), r.hits(), r.hitRatio());
        }
      }
      System.out.println("wrote " + out);
    }
    return 0;
  }

  /** The replaying tenant's hits over {@code trace}, flooded or alone, with quotas or without. */
  Result replay(MooncakeTrace trace, boolean quotas, boolean flooded) {
    long replayedQuota = (long) ramBlocks / 2 * KvCacheModel.BLOCK_BYTES;
    long floodQuota = (long) ramBlocks / 4 * KvCacheModel.BLOCK_BYTES;
    KvCacheBuilder b = KvCacheBuilder.newBuilder()
        .ramBytes(KvCacheModel.ramBytesFor(ramBlocks))
        .maxBlockBytes(KvCacheModel.BLOCK_BYTES);
    if (quotas) {
      b.ramQuota(REPLAYED, replayedQuota).ramQuota(FLOOD, floodQuota);
    }
    KvCache cache = b.build();
    long floodBlocks = flooded ? floodFactor * (floodQuota / KvCacheModel.BLOCK_BYTES) : 0;
    ByteBuffer block = ByteBuffer.allocateDirect(KvCacheModel.BLOCK_BYTES);
    long accesses = 0;
    long hits = 0;
    long flood = 0;
    try (KvCacheModel replayed =
        new KvCacheModel(cache, KvCacheModel.BLOCK_BYTES, false, REPLAYED)) {
      int[][] requests = trace.requests();
      for (int r = 0; r < requests.length; r++) {
        hits += replayed.serve(requests[r]);
        accesses += requests[r].length;
        // the flood's blocks so far, spread evenly over the requests
        for (long due = floodBlocks * (r + 1) / requests.length; flood < due; flood++) {
          BlockKey key = KvCacheModel.key(FLOOD, (int) flood);
          cache.put(key, block.clear().putLong(0, flood));
        }
      }
    }
    return new Result(trace.name(), ramBlocks, quotas, flooded, accesses, hits);
  }
}
