package dev.kvcache.bench.trace;

import dev.kvcache.KvCache;
import dev.kvcache.disk.DiskTier;
import dev.kvcache.disk.DiskTierConfig;
import dev.kvcache.disk.SyncPolicy;
import dev.kvcache.tiered.Durability;
import dev.kvcache.tiered.KvCacheBuilder;
import dev.kvcache.tiered.TieredCache;
import dev.kvcache.tiered.TieredStats;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

/**
 * Replays request traces through the disk tier alone, against exact LRU of its capacity and of
 * the blocks it holds on average, and through RAM over disk, against one LRU of their combined
 * capacity, counting the hits each tier served. Blocks are 4,032 bytes, so that a block's record
 * (64-byte header and payload) is one 4 KiB page on disk and one 4 KiB granule in RAM:
 * capacities count blocks.
 *
 * <p>The disk tier of N blocks has eight super-blocks of N / 8 records each (at least 15, the
 * smallest super-block), and room beside them for its index's journal (checkpointed at 1/32 of
 * the blocks' bytes) and checkpoint. It evicts an eighth of its blocks at once, oldest first,
 * with a second chance (rewritten forward by the reclaimer) for the blocks read since they were
 * written. Its reclaimer runs in the background as in production, unthrottled: how much of its
 * second chance it gives before a put must drop a super-block depends on the thread timing, so
 * figures move by a little between runs. RAM over disk is the tiered cache with {@link
 * Durability#RAM_FIRST}: blocks reach the disk when RAM evicts them, so the two tiers hold
 * different blocks and the LRU reference has their sum of capacity.
 *
 * <pre>
 * java -XX:MaxDirectMemorySize=2g -cp kvcache-bench/target/benchmarks.jar \
 *     dev.kvcache.bench.trace.TierReplay ../shared/data/traces/*.jsonl.zst \
 *     --dir /dev/shm/kvcache-replay --out docs/results/traces/trace-tiers.csv
 * </pre>
 */
@Command(name = "tier-replay", mixinStandardHelpOptions = true,
    description = "Hit ratio per tier of the disk tier and of RAM over disk, on request traces.")
public final class TierReplay implements Callable<Integer> {

  /** The disk tier's page, the unit of its records and files. */
  private static final long PAGE = 4096;

  /** Payload bytes per block: with its record's 64-byte header, one page. */
  static final int BLOCK_BYTES = (int) PAGE - 64;

  @Parameters(paramLabel = "TRACE", arity = "1..*",
      description = "trace files (.jsonl or .jsonl.zst), one request with hash_ids per line")
  List<Path> traces;

  @Option(names = "--capacities", split = ",", defaultValue = "1000,5000,10000,30000,50000",
      description = "disk tier capacities in blocks (default: ${DEFAULT-VALUE})")
  List<Integer> capacities;

  @Option(names = "--ram-fraction", defaultValue = "0.25",
      description = "RAM's capacity over RAM over disk, as a fraction of the disk's "
          + "(default: ${DEFAULT-VALUE})")
  double ramFraction;

  @Option(names = "--blocks-per-second", defaultValue = "100000",
      description = "the pace of the replay in block accesses per second, which the disk tier's "
          + "background reclaimer must keep up with (default: ${DEFAULT-VALUE})")
  double blocksPerSecond;

  @Option(names = "--dir", required = true,
      description = "a directory for the disk tier's files (emptied first; tmpfs is fastest)")
  Path dir;

  @Option(names = "--out", description = "CSV file for the results")
  Path out;

  /** One replay: hits per tier, of a trace at a disk capacity, in blocks. */
  record Result(String trace, String model, int diskBlocks, long diskHeld, int ramBlocks,
      long accesses,
      long ramHits, long spillHits, long diskHits, long lruHits, long lruHeldHits) {
    long hits() {
      return ramHits + spillHits + diskHits;
    }
  }

  public static void main(String[] args) {
    System.exit(new CommandLine(new TierReplay()).execute(args));
  }

  @Override
  public Integer call() throws IOException {
    if (ramFraction <= 0) {
      throw new CommandLine.ParameterException(new CommandLine(this),
          "--ram-fraction must be positive");
    }
    List<Result> results = new ArrayList<>();
    System.out.printf(Locale.ROOT, "%-13s %-13s %8s %8s %8s %7s %7s %7s %7s %9s %9s%n", "trace",
        "model", "disk", "held", "RAM", "RAM", "spill", "disk", "total", "LRU same", "LRU held");
    for (Path file : traces) {
      MooncakeTrace trace = MooncakeTrace.load(file);
      for (int capacity : capacities) {
        int perSuperBlock = Math.max(15, (capacity + 7) / 8);
        int diskBlocks = 8 * perSuperBlock;
        int ramBlocks = (int) Math.round(ramFraction * diskBlocks);
        results.add(print(replay(trace, "disk", diskBlocks, 0, perSuperBlock)));
        results.add(print(replay(trace, "ram-over-disk", diskBlocks, ramBlocks, perSuperBlock)));
      }
    }
    if (out != null) {
      writeCsv(out, results);
      System.out.println("wrote " + out);
    }
    return 0;
  }

  Result replay(MooncakeTrace trace, String model, int diskBlocks, int ramBlocks,
      int perSuperBlock) throws IOException {
    empty(dir);
    long journalBytes = Math.max(64 << 10, diskBlocks * PAGE / 32);
    DiskTier disk = DiskTier.open(DiskTierConfig
        .builder(dir, (long) diskBlocks * PAGE
            + 8L * PAGE // each super-block's file header page
            + 2 * journalBytes) // the index's journal and checkpoint count in the capacity
        .superBlockBytes((perSuperBlock + 1L) * PAGE)
        .checkpointJournalBytes(journalBytes)
        .maxBlockBytes(BLOCK_BYTES)
        .minFreeBytes(0)
        .syncPolicy(SyncPolicy.NONE)
        .reclaimBytesPerSecond(Long.MAX_VALUE)
        .build());
    KvCache cache = ramBlocks == 0 ? disk : KvCacheBuilder.newBuilder()
        .ramBytes(KvCacheModel.ramBytesFor(ramBlocks))
        .maxBlockBytes(BLOCK_BYTES)
        .lowerTier(disk)
        .durability(Durability.RAM_FIRST)
        // a replay outruns the spill thread: puts wait for it, so that nothing is dropped
        .spillQueueWait(Duration.ofSeconds(30))
        .spillOnClose(false)
        .build();
    long accesses = 0;
    long hits = 0;
    TieredStats tiers;
    long startNanos = System.nanoTime();
    long heldSum = 0;
    int samples = 0;
    try (KvCacheModel served = new KvCacheModel(cache, BLOCK_BYTES, true)) {
      for (int[] ids : trace.requests()) {
        hits += served.serve(ids);
        accesses += ids.length;
        if (++samples % 16 == 0) {
          heldSum += disk.stats().blocks();
        }
        long ahead = (long) (accesses * 1e9 / blocksPerSecond) - (System.nanoTime() - startNanos);
        if (ahead > 1_000_000) {
          LockSupport.parkNanos(ahead);
        }
      }
      tiers = cache instanceof TieredCache t ? t.tieredStats() : null;
    }
    long diskHeld = heldSum / Math.max(1, samples / 16);
    long lruHits = lruHits(trace, diskBlocks + ramBlocks);
    long lruHeldHits = lruHits(trace, diskHeld + ramBlocks);
    return tiers == null
        ? new Result(trace.name(), model, diskBlocks, diskHeld, 0, accesses, 0, 0, hits, lruHits,
            lruHeldHits)
        : new Result(trace.name(), model, diskBlocks, diskHeld, ramBlocks, accesses,
            tiers.ramHits(), tiers.spillHits(), tiers.lowerHits(), lruHits, lruHeldHits);
  }

  private static long lruHits(MooncakeTrace trace, long capacity) {
    long hits = 0;
    try (LruModel lru = new LruModel(Math.max(1, capacity))) {
      for (int[] ids : trace.requests()) {
        hits += lru.serve(ids);
      }
    }
    return hits;
  }

  private static Result print(Result r) {
    double n = r.accesses();
    System.out.printf(Locale.ROOT,
        "%-13s %-13s %8d %8d %8d %7.4f %7.4f %7.4f %7.4f %9.4f %9.4f%n", r.trace(), r.model(),
        r.diskBlocks(), r.diskHeld(), r.ramBlocks(), r.ramHits() / n, r.spillHits() / n,
        r.diskHits() / n, r.hits() / n, r.lruHits() / n, r.lruHeldHits() / n);
    return r;
  }

  /** Creates {@code dir}, or deletes what it holds: each replay starts with an empty disk tier. */
  private static void empty(Path dir) throws IOException {
    Files.createDirectories(dir);
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).filter(p -> !p.equals(dir)).forEach(p -> {
        try {
          Files.delete(p);
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      });
    }
  }

  private static void writeCsv(Path file, List<Result> results) throws IOException {
    if (file.getParent() != null) {
      Files.createDirectories(file.getParent());
    }
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file))) {
      w.println("trace,model,disk_blocks,disk_blocks_held_mean,ram_blocks,accesses,ram_hits,"
          + "spill_hits,disk_hits,hit_ratio,lru_same_capacity_hit_ratio,"
          + "lru_capacity_held_hit_ratio");
      for (Result r : results) {
        double n = r.accesses();
        w.printf(Locale.ROOT, "%s,%s,%d,%d,%d,%d,%d,%d,%d,%.6f,%.6f,%.6f%n", r.trace(), r.model(),
            r.diskBlocks(), r.diskHeld(), r.ramBlocks(), r.accesses(), r.ramHits(), r.spillHits(),
            r.diskHits(), r.hits() / n, r.lruHits() / n, r.lruHeldHits() / n);
      }
    }
  }
}
