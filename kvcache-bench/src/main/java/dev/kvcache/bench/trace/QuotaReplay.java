package dev.kvcache.bench.trace;

import dev.kvcache.BlockKey;
import dev.kvcache.KvCache;
import dev.kvcache.Namespace;
import dev.kvcache.s3.testkit.RcloneS3;
import dev.kvcache.spi.TierSettings;
import dev.kvcache.tiered.Durability;
import dev.kvcache.tiered.KvCacheBuilder;
import dev.kvcache.tiered.TieredCacheConfig;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * Two tenants of one cache: one replays a request trace while the other floods the cache with
 * blocks used once, {@code --flood-factor} times its quota over the replay; the replaying tenant's
 * hit ratio flooded against its run alone, with quotas ({@link KvCacheBuilder#ramQuota}, and
 * {@link KvCacheBuilder#quota} on the disk tier) and without. Blocks are one 4 KiB granule ({@link
 * KvCacheModel}), so RAM's capacity counts blocks; on disk a 4 KiB block's record takes two pages
 * (its payload starts on a page, its header in the page before), so the disk's capacity is {@code
 * --disk-blocks} times 8 KiB. In each tier the replaying tenant's quota is half the capacity, the
 * flood's a quarter; the rest is the other namespaces'. With {@code --disk-blocks}, RAM is over a
 * disk tier in {@code --dir}; with {@code --bucket-blocks}, over the object tier, in a bucket of an
 * S3 server started on loopback ({@code rclone serve s3} over a temporary directory, as installed
 * by kvcache-s3's build: {@code -Dkvcache.test.s3servers=kvcache-s3/target/s3-servers}). Either is written through
 * ({@code durability = write_through}), so that what RAM evicts is there to be hit.
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

  @Option(names = "--disk-blocks", defaultValue = "0",
      description = "a disk tier under RAM of this many 4 KiB blocks (8 KiB each on disk); "
          + "0, the default, for RAM alone")
  int diskBlocks;

  @Option(names = "--dir", description = "the disk tier's directory (default: a temporary one)")
  Path dir;

  @Option(names = "--bucket-blocks", defaultValue = "0",
      description = "an object tier under RAM of this many 4 KiB blocks, in an S3 server (rclone)"
          + " started on loopback; 0, the default, for none")
  int bucketBlocks;

  @Option(names = "--out", description = "CSV file for the results")
  Path out;

  /** One tenant's hits over a replay. */
  record Result(String trace, int ramBlocks, int diskBlocks, int bucketBlocks, boolean quotas,
      boolean flooded, long accesses, long hits) {
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
    System.out.printf(Locale.ROOT, "%-28s %8s %8s %8s %7s %9s %9s%n", "trace", "RAM", "disk",
        "bucket", "quotas", "alone", "flooded");
    for (Path file : traces) {
      MooncakeTrace trace = MooncakeTrace.load(file);
      for (boolean quotas : new boolean[] {true, false}) {
        Result alone = replay(trace, quotas, false);
        Result flooded = replay(trace, quotas, true);
        results.add(alone);
        results.add(flooded);
        System.out.printf(Locale.ROOT, "%-28s %8d %8d %8d %7s %9.4f %9.4f%n", trace.name(),
            ramBlocks, diskBlocks, bucketBlocks, quotas, alone.hitRatio(), flooded.hitRatio());
      }
    }
    if (out != null) {
      if (out.getParent() != null) {
        Files.createDirectories(out.getParent());
      }
      try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out))) {
        w.println("trace,ram_blocks,disk_blocks,bucket_blocks,quotas,flooded,flood_factor,"
            + "accesses,hits,hit_ratio");
        for (Result r : results) {
          w.printf(Locale.ROOT, "%s,%d,%d,%d,%s,%s,%d,%d,%d,%.6f%n", r.trace(), r.ramBlocks(),
              r.diskBlocks(), r.bucketBlocks(), r.quotas(), r.flooded(), floodFactor,
              r.accesses(), r.hits(), r.hitRatio());
        }
      }
      System.out.println("wrote " + out);
    }
    return 0;
  }

  /** A 4 KiB block's record on disk: its payload's page and the page its header ends. */
  static final long DISK_BLOCK_BYTES = 2 * KvCacheModel.BLOCK_BYTES;

  /** The replaying tenant's hits over {@code trace}, flooded or alone, with quotas or without. */
  Result replay(MooncakeTrace trace, boolean quotas, boolean flooded) throws IOException {
    long replayedQuota = (long) ramBlocks / 2 * KvCacheModel.BLOCK_BYTES;
    long floodQuota = (long) ramBlocks / 4 * KvCacheModel.BLOCK_BYTES;
    KvCacheBuilder b = KvCacheBuilder.newBuilder()
        .ramBytes(KvCacheModel.ramBytesFor(ramBlocks))
        .maxBlockBytes(KvCacheModel.BLOCK_BYTES);
    if (quotas) {
      b.ramQuota(REPLAYED, replayedQuota).ramQuota(FLOOD, floodQuota);
    }
    Path tierDir = null;
    long floodBlocks = floodQuota / KvCacheModel.BLOCK_BYTES;
    if (diskBlocks > 0) {
      tierDir = dir != null ? Files.createDirectories(dir).resolve("quota-replay")
          : Files.createTempDirectory("quota-replay");
      long capacity = diskBlocks * DISK_BLOCK_BYTES;
      long superBlock = Math.max(64 << 10, capacity / 32 / 4096 * 4096);
      b.lower("disk", TierSettings.of(Map.of("dir", tierDir.toString(), "capacity",
          Long.toString(capacity), "super-block", Long.toString(superBlock), "sync-policy",
          "none", "scrub-rate", "0")));
      b.tiered(TieredCacheConfig.defaults().withDurability(Durability.WRITE_THROUGH));
      if (quotas) {
        b.quota("disk", REPLAYED, capacity / 2).quota("disk", FLOOD, capacity / 4);
      }
      floodBlocks = diskBlocks / 4;
    }
    RcloneS3 store = null;
    if (bucketBlocks > 0) {
      try {
        store = new RcloneS3();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while starting an S3 server", e);
      }
      long capacity = (long) bucketBlocks * KvCacheModel.BLOCK_BYTES;
      Map<String, String> s3 = new TreeMap<>();
      s3.put("endpoint", store.endpoint().toString());
      s3.put("allow-plain-http", "true");
      s3.put("bucket", RcloneS3.BUCKET);
      s3.put("capacity", Long.toString(capacity));
      s3.put("access-key-id", RcloneS3.ACCESS_KEY);
      s3.put("secret-access-key", RcloneS3.SECRET_KEY);
      s3.put("lookup-budget", "0ms"); // one server: the objects it wrote are all there are
      b.lower("s3", TierSettings.of(s3));
      b.tiered(TieredCacheConfig.defaults().withDurability(Durability.WRITE_THROUGH));
      if (quotas) {
        b.quota("s3", REPLAYED, capacity / 2).quota("s3", FLOOD, capacity / 4);
      }
      floodBlocks = bucketBlocks / 4;
    }
    try {
      return replay(trace, quotas, flooded, b.build(), flooded ? floodFactor * floodBlocks : 0);
    } finally {
      if (tierDir != null) {
        deleteTree(tierDir);
      }
      if (store != null) {
        store.close();
      }
    }
  }

  private Result replay(MooncakeTrace trace, boolean quotas, boolean flooded, KvCache cache,
      long floodBlocks) {
    ByteBuffer block = ByteBuffer.allocateDirect(KvCacheModel.BLOCK_BYTES);
    long accesses = 0;
    long hits = 0;
    long flood = 0;
    // below RAM, background reclaim or deletes may drop a block between the lookup and the load
    try (KvCacheModel replayed = new KvCacheModel(cache, KvCacheModel.BLOCK_BYTES,
        diskBlocks > 0 || bucketBlocks > 0, REPLAYED)) {
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
    return new Result(trace.name(), ramBlocks, diskBlocks, bucketBlocks, quotas, flooded, accesses,
        hits);
  }

  private static void deleteTree(Path root) throws IOException {
    try (var paths = Files.walk(root)) {
      for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
