package dev.kvcache.bench.trace;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.IntConsumer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * The hit ratio of a fleet of servers on request traces, with and without an object tier the
 * servers share, through a server leaving and one joining.
 *
 * <p>A model, not the servers: each server is an exact LRU of its capacity (its RAM and disk
 * together). Clients shard blocks over the servers alive by rendezvous hashing, as kvcache's
 * clients do. A request's blocks are looked up in order, each in its owner's cache and then, with
 * the object tier, in the bucket (an exact LRU of {@code --bucket} times the servers' capacity
 * together); the leading blocks found are hits. A block found only in the bucket is copied into
 * its owner (the server promotes it); every block computed is stored in its owner, but for a
 * request's last block, which is partial and which an engine does not store ({@link LruModel}).
 * With the object tier, what goes up to the bucket is {@code --uploads}: {@code every-block}
 * uploads each block stored, behind the put; {@code evicted} uploads each block a server evicts,
 * unless the bucket holds it already. After {@code --leave-at} of the requests one server leaves
 * with all it held; after {@code --join-at} an empty one joins. The figures are the hit ratio in
 * the steady state before the leave (from {@code --warm-up} on), and over the first {@code
 * --window} requests after the leave and after the join; and, since a trace's hit ratio moves
 * along it, each of the last two over the hit ratio of a run without the leave and the join over
 * the same requests.
 *
 * <pre>
 * java -cp kvcache-bench/target/benchmarks.jar dev.kvcache.bench.trace.FleetReplay \
 *     ../shared/data/traces/*.jsonl.zst --servers 3 --capacities 2000,10000 \
 *     --out docs/results/object-tier/fleet-replay.csv
 * </pre>
 */
@Command(name = "fleet-replay", mixinStandardHelpOptions = true,
    description = "Hit ratio of a fleet of servers, with and without a shared object tier.")
public final class FleetReplay implements Callable<Integer> {

  @Parameters(paramLabel = "TRACE", arity = "1..*",
      description = "trace files (.jsonl or .jsonl.zst), one request with hash_ids per line")
  List<Path> traces;

  @Option(names = "--servers", defaultValue = "3", description = "servers (default: 3)")
  int servers;

  @Option(names = "--capacities", split = ",", defaultValue = "2000,10000",
      description = "each server's capacity in blocks (default: ${DEFAULT-VALUE})")
  List<Integer> capacities;

  @Option(names = "--warm-up", defaultValue = "0.25",
      description = "the share of requests before the steady state is counted (default: 0.25)")
  double warmUp;

  @Option(names = "--leave-at", defaultValue = "0.5",
      description = "the share of requests after which a server leaves (default: 0.5)")
  double leaveAt;

  @Option(names = "--join-at", defaultValue = "0.75",
      description = "the share of requests after which an empty server joins (default: 0.75)")
  double joinAt;

  @Option(names = "--window", defaultValue = "1000",
      description = "requests counted after the leave and after the join (default: 1000)")
  int window;

  @Option(names = "--touch-bucket", negatable = true, defaultValue = "true",
      fallbackValue = "true",
      description = "whether hits in a server's RAM or disk also count as uses of the bucket's "
          + "copy (default: ${DEFAULT-VALUE})")
  boolean touchBucket;

  @Option(names = "--bucket", defaultValue = "1",
      description = "the bucket's capacity as a multiple of the servers' together (default: 1)")
  int bucketMultiple;

  @Option(names = "--uploads", split = ",", defaultValue = "every-block,evicted",
      description = "what goes up to the bucket, each run in turn: every-block, evicted "
          + "(default: ${DEFAULT-VALUE})")
  List<String> uploads;

  @Option(names = "--out", description = "CSV file for the results")
  Path out;

  /** Hits and accesses over one stretch of requests. */
  private static final class Tally {
    long hits;
    long accesses;

    double ratio() {
      return accesses == 0 ? Double.NaN : hits / (double) accesses;
    }
  }

  /**
   * One configuration's figures: the hit ratios of the run with the leave and the join, and of a
   * run without them over the same stretches (what the fleet would have had).
   */
  record Result(String trace, int servers, int capacity, String upload, double steady,
      double afterLeave, double afterJoin, double undisturbedAfterLeave,
      double undisturbedAfterJoin, double objectShare, double uploadsPerRequest) {

    boolean objectTier() {
      return !upload.equals(NONE);
    }

    double leaveRelative() {
      return afterLeave / undisturbedAfterLeave;
    }

    double joinRelative() {
      return afterJoin / undisturbedAfterJoin;
    }
  }

  /** No object tier. */
  private static final String NONE = "none";

  /** The hit ratios of one run over the stretches counted, and its uploads per request. */
  private record Run(double steady, double afterLeave, double afterJoin, double objectShare,
      double uploadsPerRequest) {}

  public static void main(String[] args) {
    System.exit(new CommandLine(new FleetReplay()).execute(args));
  }

  @Override
  public Integer call() throws IOException {
    if (servers < 2 || !(0 <= warmUp && warmUp < leaveAt && leaveAt < joinAt && joinAt < 1)) {
      throw new CommandLine.ParameterException(new CommandLine(this),
          "need --servers >= 2 and 0 <= --warm-up < --leave-at < --join-at < 1");
    }
    for (String u : uploads) {
      if (!u.equals("every-block") && !u.equals("evicted")) {
        throw new CommandLine.ParameterException(new CommandLine(this),
            "--uploads takes every-block and evicted, got " + u);
      }
    }
    List<String> modes = new ArrayList<>(List.of(NONE));
    modes.addAll(uploads);
    List<Result> results = new ArrayList<>();
    System.out.printf(Locale.ROOT, "%-28s %7s %8s %11s %8s %12s %11s %13s %12s %13s %12s%n",
        "trace", "servers", "capacity", "uploads", "steady", "after leave", "after join",
        "leave/undist.", "join/undist.", "bucket share", "uploads/req");
    for (Path file : traces) {
      MooncakeTrace trace = MooncakeTrace.load(file);
      for (int capacity : capacities) {
        for (String mode : modes) {
          Run disturbed = replay(trace, capacity, mode, true);
          Run undisturbed = replay(trace, capacity, mode, false);
          Result r = new Result(trace.name(), servers, capacity, mode, disturbed.steady(),
              disturbed.afterLeave(), disturbed.afterJoin(), undisturbed.afterLeave(),
              undisturbed.afterJoin(), disturbed.objectShare(), disturbed.uploadsPerRequest());
          results.add(r);
          System.out.printf(Locale.ROOT,
              "%-28s %7d %8d %11s %8.4f %12.4f %11.4f %13.3f %12.3f %13.4f %12.3f%n", r.trace(),
              r.servers(), r.capacity(), r.upload(), r.steady(), r.afterLeave(), r.afterJoin(),
              r.leaveRelative(), r.joinRelative(), r.objectShare(), r.uploadsPerRequest());
        }
      }
    }
    if (out != null) {
      writeCsv(out, results);
      System.out.println("wrote " + out);
    }
    return 0;
  }

  /** One replay; with {@code events}, a server leaves and one joins. */
  Run replay(MooncakeTrace trace, int capacity, String mode, boolean events) {
    boolean objectTier = !mode.equals(NONE);
    boolean evictedOnly = mode.equals("evicted");
    int[][] requests = trace.requests();
    int warmUpEnd = (int) (warmUp * requests.length);
    int leave = (int) (leaveAt * requests.length);
    int join = (int) (joinAt * requests.length);
    Lru bucket = objectTier ? new Lru((long) bucketMultiple * servers * capacity, null) : null;
    long[] uploaded = {0};
    IntConsumer evicted = !evictedOnly ? null : id -> {
      if (!bucket.contains(id)) {
        bucket.put(id);
        uploaded[0]++;
      }
    };
    List<Server> alive = new ArrayList<>();
    int nextId = 0;
    for (int i = 0; i < servers; i++) {
      alive.add(new Server(nextId++, new Lru(capacity, evicted)));
    }
    Tally steady = new Tally();
    Tally afterLeave = new Tally();
    Tally afterJoin = new Tally();
    long bucketHits = 0;
    long allHits = 0;
    for (int r = 0; r < requests.length; r++) {
      if (r == leave && events) {
        alive.remove(0); // the first server leaves with what it held
      } else if (r == join && events) {
        alive.add(new Server(nextId++, new Lru(capacity, evicted)));
      }
      int[] ids = requests[r];
      int hits = 0;
      boolean leading = true;
      for (int i = 0; i < ids.length; i++) {
        int id = ids[i];
        Server owner = owner(alive, id);
        boolean found = false;
        if (leading) {
          if (owner.cache.touch(id)) {
            found = true;
            if (bucket != null && touchBucket) {
              bucket.touch(id); // a hit above the bucket counts as a use of its copy
            }
          } else if (bucket != null && bucket.touch(id)) {
            found = true;
            bucketHits++;
            owner.cache.put(id); // promoted on the server that read it
          }
        }
        if (found) {
          hits++;
        } else if (i < ids.length - 1) { // an engine does not store a request's partial last block
          leading = false;
          owner.cache.put(id); // computed and stored
          if (bucket != null && !evictedOnly) {
            bucket.put(id); // uploaded behind the put
            uploaded[0]++;
          }
        } else {
          leading = false;
        }
      }
      allHits += hits;
      Tally t = r >= join && r < join + window ? afterJoin
          : r >= leave && r < leave + window ? afterLeave
          : r >= warmUpEnd && r < leave ? steady : null;
      if (t != null) {
        t.hits += hits;
        t.accesses += ids.length;
      }
    }
    return new Run(steady.ratio(), afterLeave.ratio(), afterJoin.ratio(),
        allHits == 0 ? 0 : bucketHits / (double) allHits, uploaded[0] / (double) requests.length);
  }

  /** The server alive with the highest rendezvous weight for the block. */
  private static Server owner(List<Server> alive, int id) {
    Server best = null;
    long bestWeight = 0;
    for (Server s : alive) {
      long w = mix(((long) id << 32) ^ s.id);
      if (best == null || Long.compareUnsigned(w, bestWeight) > 0) {
        best = s;
        bestWeight = w;
      }
    }
    return best;
  }

  /** SplitMix64's finaliser: a well-mixed 64-bit hash. */
  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }

  private record Server(int id, Lru cache) {}

  /** Exact LRU over block ids, telling a listener (if any) of each block it evicts. */
  private static final class Lru {
    private final long capacity;
    private final LinkedHashMap<Integer, Boolean> blocks;

    Lru(long capacity, IntConsumer onEvicted) {
      this.capacity = capacity;
      this.blocks = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Integer, Boolean> eldest) {
          boolean evict = size() > Lru.this.capacity;
          if (evict && onEvicted != null) {
            onEvicted.accept(eldest.getKey());
          }
          return evict;
        }
      };
    }

    /** Whether the block is held, its place unchanged. */
    boolean contains(int id) {
      return blocks.containsKey(id);
    }

    /** Whether the block is held; it becomes the most recently used if so. */
    boolean touch(int id) {
      return blocks.get(id) != null;
    }

    void put(int id) {
      blocks.put(id, Boolean.TRUE);
    }
  }

  private void writeCsv(Path file, List<Result> results) throws IOException {
    if (file.getParent() != null) {
      Files.createDirectories(file.getParent());
    }
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file))) {
      w.println("trace,servers,capacity_blocks,bucket_multiple,object_tier,uploads,touch_bucket,"
          + "steady_hit_ratio,"
          + "after_leave_hit_ratio,after_join_hit_ratio,undisturbed_after_leave_hit_ratio,"
          + "undisturbed_after_join_hit_ratio,after_leave_relative,after_join_relative,"
          + "bucket_share_of_hits,uploads_per_request");
      for (Result r : results) {
        w.printf(Locale.ROOT,
            "%s,%d,%d,%d,%s,%s,%s,%.6f,%.6f,%.6f,%.6f,%.6f,%.4f,%.4f,%.6f,%.4f%n",
            r.trace(), r.servers(), r.capacity(), bucketMultiple, r.objectTier(), r.upload(),
            touchBucket,
            r.steady(), r.afterLeave(), r.afterJoin(), r.undisturbedAfterLeave(),
            r.undisturbedAfterJoin(), r.leaveRelative(), r.joinRelative(), r.objectShare(),
            r.uploadsPerRequest());
      }
    }
  }
}
