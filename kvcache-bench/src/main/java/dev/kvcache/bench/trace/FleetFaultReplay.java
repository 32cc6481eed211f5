package dev.kvcache.bench.trace;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.Namespace;
import dev.kvcache.s3.S3Tier;
import dev.kvcache.s3.testkit.FaultyProxy.Answer;
import dev.kvcache.s3.testkit.FaultyProxy.Mode;
import dev.kvcache.s3.testkit.FaultyProxy;
import dev.kvcache.spi.Rendezvous;
import dev.kvcache.tiered.KvCacheConfig;
import dev.kvcache.tiered.StackedTier;
import dev.kvcache.tiered.TieredCache;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

/**
 * A fleet of three real cache stacks (RAM → disk → object store, as servers stack them) over one
 * bucket of a real S3-compatible server, replaying a Mooncake trace as engines would, while the
 * store has a bad day: throttling a share of the requests ({@code --fault slow-down}), or down
 * ({@code --fault down}), for {@code --fault-seconds}.
 *
 * <p>Each request's blocks are read in order from the server the clients send each key to
 * (rendezvous hashing over the three, as {@link dev.kvcache.s3.S3TierConfig#fleet()} tells each
 * server); the leading blocks read are hits, and the rest are computed and stored (one thread: a
 * client that waits for each answer, sending each request as soon as the last is answered, or on
 * a fixed schedule of {@code --rate} requests a second). The store is reached through a fault
 * proxy. Each trace is
 * replayed twice, on fresh disks and a fresh prefix of the bucket: first with the fault, which
 * starts after {@code --fault-after} of the requests, then undisturbed; the figures compare the
 * two runs over the same requests:
 *
 * <ul>
 *   <li>the hit ratio over the requests sent during the fault, disturbed over undisturbed;
 *   <li>the p50 and p99 time of reads served by RAM or disk (not by the bucket) over those
 *       requests, disturbed over undisturbed;
 *   <li>after the fault ends: the longest stretch any server still backed off ({@code paused}),
 *       and how long until the bucket served a read again.
 * </ul>
 *
 * <pre>
 * kvcache-bench/run-fleet-fault-replay.sh   # starts rclone serve s3 on /dev/shm, runs both faults
 * </pre>
 */
@Command(name = "fleet-fault-replay", mixinStandardHelpOptions = true,
    description = "A fleet of three cache stacks over one bucket, through a store's bad day.")
public final class FleetFaultReplay implements Callable<Integer> {

  private static final int SERVERS = 3;
  private static final Namespace NS = Namespace.of("fleet-faults", "bf16", "tp0of1");

  @Parameters(paramLabel = "TRACE", arity = "1", description = "a trace file (.jsonl[.zst])")
  Path trace;

  @Option(names = "--endpoint", required = true, description = "the S3 server's URL")
  URI endpoint;

  @Option(names = "--bucket", defaultValue = "bench", description = "its bucket (must exist)")
  String bucket;

  @Option(names = "--access-key", defaultValue = "bench-access")
  String accessKey;

  @Option(names = "--secret-key", defaultValue = "bench-secret-key")
  String secretKey;

  @Option(names = "--fault", required = true,
      description = "slow-down (503 SlowDown to --share of requests) or down (connections reset)")
  String fault;

  @Option(names = "--share", defaultValue = "0.1",
      description = "with slow-down: the share of requests throttled (default: 0.1)")
  double share;

  @Option(names = "--fault-after", defaultValue = "0.3",
      description = "the share of requests after which the fault starts (default: 0.3)")
  double faultAfter;

  @Option(names = "--fault-seconds", defaultValue = "60",
      description = "how long the fault lasts (default: 60)")
  int faultSeconds;

  @Option(names = "--requests", defaultValue = "0",
      description = "requests replayed from the trace's start; 0: all (default)")
  int requests;

  @Option(names = "--rate", defaultValue = "0",
      description = "requests sent per second, on a fixed schedule; 0: each as soon as the last"
          + " is answered (default)")
  double rate;

  @Option(names = "--block-kib", defaultValue = "64", description = "KiB a block (default: 64)")
  int blockKib;

  @Option(names = "--ram-blocks", defaultValue = "256",
      description = "blocks each server's RAM holds (default: 256)")
  int ramBlocks;

  @Option(names = "--disk-blocks", defaultValue = "2048",
      description = "blocks each server's disk holds (default: 2048)")
  int diskBlocks;

  @Option(names = "--work", description = "where the disks go (default: a temporary directory)")
  Path work;

  @Option(names = "--out", description = "CSV file the result row is appended to")
  Path out;

  /** What one replay saw, request by request. */
  private static final class Run {
    final long[] hits;
    final long[] blocks;
    /**
     * Reads served above the bucket: each its request's number (high 24 bits) and its time in
     * nanoseconds (low 40 bits).
     */
    long[] fastReads = new long[1 << 16];
    int fastReadCount;
    int faultFrom = -1;
    int faultTo = -1;
    long faultEndedAt;
    long longestPauseAfterNanos;
    long firstBucketHitAfterNanos = -1;

    Run(int requests) {
      hits = new long[requests];
      blocks = new long[requests];
    }
  }

  public static void main(String[] args) {
    System.exit(new CommandLine(new FleetFaultReplay()).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    if (!fault.equals("slow-down") && !fault.equals("down")) {
      throw new CommandLine.ParameterException(new CommandLine(this),
          "--fault must be slow-down or down, got '" + fault + "'");
    }
    MooncakeTrace t = MooncakeTrace.load(trace);
    int[][] reqs = requests > 0 ? Arrays.copyOf(t.requests(), Math.min(requests,
        t.requests().length)) : t.requests();
    Path dir = work != null ? Files.createDirectories(work)
        : Files.createTempDirectory("fleet-fault-replay");
    String tag = fault + "-" + System.currentTimeMillis();
    System.out.printf(Locale.ROOT, "%s: %d requests, %d KiB blocks, %s for %d s after %.0f%%%n",
        t.name(), reqs.length, blockKib, fault, faultSeconds, faultAfter * 100);
    Run disturbed = replay(reqs, dir.resolve("disturbed"), "faults/" + tag + "/d/", true);
    Run undisturbed = replay(reqs, dir.resolve("undisturbed"), "faults/" + tag + "/u/", false);
    report(t.name(), disturbed, undisturbed);
    return 0;
  }

  private Map<String, String> settings(Path disk, String prefix, URI store, List<String> fleet,
      int self) {
    int block = blockKib << 10;
    Map<String, String> s = new TreeMap<>();
    s.put("ram.bytes", (long) ramBlocks * block + "B");
    s.put("ram.max-block-bytes", block + "B");
    s.put("lower", "disk, s3");
    s.put("tiered.durability", "write_behind");
    s.put("disk.dir", disk.toString());
    s.put("disk.capacity", (long) diskBlocks * block + "B");
    s.put("disk.min-free", "0B");
    s.put("disk.sync-policy", "none");
    s.put("s3.endpoint", store.toString());
    s.put("s3.bucket", bucket);
    s.put("s3.capacity", (long) 4 * SERVERS * diskBlocks * block + "B");
    s.put("s3.prefix", prefix);
    s.put("s3.access-key-id", accessKey);
    s.put("s3.secret-access-key", secretKey);
    s.put("s3.request-timeout", "2s");
    s.put("s3.list-interval", "10s");
    s.put("s3.fleet", String.join(",", fleet));
    s.put("s3.fleet-self", fleet.get(self));
    return s;
  }

  private Run replay(int[][] reqs, Path disks, String prefix, boolean withFault)
      throws Exception {
    List<String> fleet = List.of("10.0.0.1:7070", "10.0.0.2:7070", "10.0.0.3:7070");
    List<Long> ids = fleet.stream().map(Rendezvous::serverId).toList();
    Run run = new Run(reqs.length);
    int block = blockKib << 10;
    try (FaultyProxy proxy = new FaultyProxy(endpoint)) {
      List<KvCache> servers = new ArrayList<>();
      List<S3Tier> buckets = new ArrayList<>();
      try {
        for (int i = 0; i < SERVERS; i++) {
          KvCache cache = KvCacheConfig.of(settings(disks.resolve("s" + i), prefix,
              proxy.endpoint(), fleet, i)).open();
          servers.add(cache);
          buckets.add((S3Tier) ((StackedTier) ((TieredCache) cache).lower()).backing());
        }
        ByteBuffer dst = ByteBuffer.allocateDirect(block);
        ByteBuffer payload = ByteBuffer.allocateDirect(block);
        new Random(1).ints(block / 4).forEach(payload::putInt);
        Random dice = new Random(42);
        int faultStart = (int) (reqs.length * faultAfter);
        long faultUntil = 0;
        long pauseSince = 0;
        long started = System.nanoTime();
        for (int r = 0; r < reqs.length; r++) {
          if (rate > 0) { // on schedule, so that both runs send the same requests at the same time
            long due = started + (long) (r * 1e9 / rate);
            while (System.nanoTime() - due < 0) {
              Thread.sleep(Math.max(1, (due - System.nanoTime()) / 1_000_000));
            }
          }
          long now = System.nanoTime();
          if (withFault && r == faultStart) {
            run.faultFrom = r;
            faultUntil = now + Duration.ofSeconds(faultSeconds).toNanos();
            if (fault.equals("down")) {
              proxy.mode(Mode.DOWN);
            } else {
              proxy.rule(req -> dice.nextDouble() < share
                  ? Answer.error("503 Slow Down", "SlowDown") : null);
            }
          } else if (run.faultFrom >= 0 && run.faultTo < 0 && now - faultUntil >= 0) {
            run.faultTo = r;
            run.faultEndedAt = now;
            proxy.mode(Mode.PASS);
          }
          replayRequest(reqs[r], r, servers, buckets, ids, dst, payload, run);
          if (run.faultTo >= 0) {
            boolean paused = buckets.stream().anyMatch(b -> b.s3Stats().paused());
            long at = System.nanoTime();
            if (paused && pauseSince == 0) {
              pauseSince = at;
            } else if (!paused && pauseSince != 0) {
              run.longestPauseAfterNanos = Math.max(run.longestPauseAfterNanos, at - pauseSince);
              pauseSince = 0;
            }
          }
          if ((r + 1) % 1000 == 0) {
            System.out.printf(Locale.ROOT, "  %s: %d of %d requests, %.0f s%n",
                withFault ? "with the fault" : "undisturbed", r + 1, reqs.length,
                (System.nanoTime() - started) / 1e9);
          }
        }
        if (pauseSince != 0) {
          run.longestPauseAfterNanos = Math.max(run.longestPauseAfterNanos,
              System.nanoTime() - pauseSince);
        }
        if (withFault && run.faultTo < 0) {
          throw new IllegalStateException("the trace ended before the fault did: replay more"
              + " requests or shorten --fault-seconds");
        }
      } finally {
        for (KvCache cache : servers) {
          cache.close();
        }
      }
    }
    return run;
  }

  /** The engine's cycle for one request: read the leading blocks it finds, store the rest. */
  private void replayRequest(int[] hashIds, int r, List<KvCache> servers, List<S3Tier> buckets,
      List<Long> ids, ByteBuffer dst, ByteBuffer payload, Run run) {
    int found = 0;
    for (; found < hashIds.length; found++) {
      BlockKey key = BlockKey.of(NS, 0, hashIds[found]);
      int owner = Rendezvous.pick(key, ids);
      long bucketHits = buckets.get(owner).stats().hits();
      long start = System.nanoTime();
      GetStatus got = servers.get(owner).getInto(key, dst.clear());
      long took = System.nanoTime() - start;
      if (got != GetStatus.HIT) {
        break;
      }
      if (buckets.get(owner).stats().hits() == bucketHits) {
        recordFastRead(run, r, took);
      } else if (run.faultEndedAt != 0 && run.firstBucketHitAfterNanos < 0) {
        run.firstBucketHitAfterNanos = System.nanoTime() - run.faultEndedAt;
      }
    }
    run.hits[r] = found;
    run.blocks[r] = hashIds.length;
    for (int i = found; i < hashIds.length; i++) {
      BlockKey key = BlockKey.of(NS, 0, hashIds[i]);
      servers.get(Rendezvous.pick(key, ids)).put(key, payload.duplicate().clear());
    }
  }

  private static final long NANOS_MASK = (1L << 40) - 1;

  private static void recordFastRead(Run run, int request, long nanos) {
    if (run.fastReadCount == run.fastReads.length) {
      run.fastReads = Arrays.copyOf(run.fastReads, 2 * run.fastReads.length);
    }
    run.fastReads[run.fastReadCount++] = (long) request << 40 | Math.min(nanos, NANOS_MASK);
  }

  /** The times of the reads served above the bucket during requests [from, to), sorted. */
  private static long[] fastReads(Run run, int from, int to) {
    return Arrays.stream(run.fastReads, 0, run.fastReadCount)
        .filter(v -> (v >>> 40) >= from && (v >>> 40) < to)
        .map(v -> v & NANOS_MASK).sorted().toArray();
  }

  private static double ratio(Run run, int from, int to) {
    long hits = 0;
    long blocks = 0;
    for (int r = from; r < to; r++) {
      hits += run.hits[r];
      blocks += run.blocks[r];
    }
    return blocks == 0 ? Double.NaN : hits / (double) blocks;
  }

  private static double percentileMicros(long[] sorted, double p) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p * sorted.length) - 1)] / 1e3;
  }

  private void report(String traceName, Run disturbed, Run undisturbed) throws IOException {
    int from = disturbed.faultFrom;
    int to = disturbed.faultTo;
    double hitD = ratio(disturbed, from, to);
    double hitU = ratio(undisturbed, from, to);
    long[] fastD = fastReads(disturbed, from, to);
    long[] fastU = fastReads(undisturbed, from, to);
    double p50D = percentileMicros(fastD, 0.5);
    double p50U = percentileMicros(fastU, 0.5);
    double p99D = percentileMicros(fastD, 0.99);
    double p99U = percentileMicros(fastU, 0.99);
    double pauseAfter = disturbed.longestPauseAfterNanos / 1e9;
    double bucketBack = disturbed.firstBucketHitAfterNanos < 0 ? Double.NaN
        : disturbed.firstBucketHitAfterNanos / 1e9;
    String label = fault.equals("down") ? "down" : "slow-down " + Math.round(share * 100) + "%";
    System.out.printf(Locale.ROOT, "%s, %s for %d s: requests %d to %d%n", traceName, label,
        faultSeconds, from, to);
    System.out.printf(Locale.ROOT,
        "  hit ratio %.3f against %.3f undisturbed: %.3f%n", hitD, hitU, hitD / hitU);
    System.out.printf(Locale.ROOT, "  RAM and disk reads (%d, %d): p50 %.0f us against %.0f us"
        + " (%.2f), p99 %.0f us against %.0f us (%.2f)%n", fastD.length, fastU.length, p50D, p50U,
        p50D / p50U, p99D, p99U, p99D / p99U);
    System.out.printf(Locale.ROOT, "  after the fault: longest pause %.2f s, first bucket hit"
        + " after %.2f s%n", pauseAfter, bucketBack);
    if (out != null) {
      boolean header = !Files.exists(out) || Files.size(out) == 0;
      Files.createDirectories(out.toAbsolutePath().getParent());
      try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out,
          java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND))) {
        if (header) {
          w.println("trace,fault,seconds,requests_from,requests_to,hit_ratio,hit_ratio_undisturbed,"
              + "fast_reads,p50_us,p50_us_undisturbed,p99_us,p99_us_undisturbed,"
              + "longest_pause_after_s,first_bucket_hit_after_s");
        }
        w.printf(Locale.ROOT, "%s,%s,%d,%d,%d,%.4f,%.4f,%d,%.1f,%.1f,%.1f,%.1f,%.3f,%.3f%n",
            traceName, label, faultSeconds, from, to, hitD, hitU, fastD.length, p50D, p50U, p99D,
            p99U, pauseAfter, bucketBack);
      }
    }
  }
}
