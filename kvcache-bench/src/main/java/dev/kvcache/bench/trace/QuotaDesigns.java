package dev.kvcache.bench.trace;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * Two ways to give namespaces quotas, modelled in blocks on real traces: <b>partitions</b> (an LRU
 * per namespace with a quota, bounded by it, and one for the others, bounded by what the quotas
 * leave) and <b>caps over a shared order</b> (one LRU over every block, bounded by the capacity; a
 * namespace at its cap evicts its own least recent block, any other put past the capacity the
 * least recent of all, whoever's), and <b>lending</b> partitions (partitions whose unused room
 * the namespaces without a quota borrow until a namespace with one takes it back). Three tenants: {@code quoted}, with half the capacity as its
 * quota, replays one trace; {@code others}, without a quota, replays another; {@code flood}, with
 * a quarter, puts blocks used once, {@code --flood-factor} times its quota over the replay. Each
 * scenario leaves some of them idle, and in one the tenant without a quota floods instead. The
 * hit ratio of each tenant that replays, per design.
 *
 * <pre>
 * java -cp kvcache-bench/target/benchmarks.jar dev.kvcache.bench.trace.QuotaDesigns \
 *     ../shared/data/traces/mooncake_conversation_trace.jsonl.zst \
 *     ../shared/data/traces/mooncake_synthetic_trace.jsonl.zst --capacity 20000 \
 *     --out docs/results/traces/quota-designs.csv
 * </pre>
 */
@Command(name = "quota-designs", mixinStandardHelpOptions = true,
    description = "Partitions against caps over a shared order, on two traces and a flood.")
public final class QuotaDesigns implements Callable<Integer> {

  @Parameters(index = "0", paramLabel = "QUOTED_TRACE",
      description = "the trace the tenant with a quota replays")
  Path quotedTrace;

  @Parameters(index = "1", paramLabel = "OTHERS_TRACE",
      description = "the trace the tenant without a quota replays")
  Path othersTrace;

  @Option(names = "--capacity", defaultValue = "20000",
      description = "the cache's capacity in blocks (default: ${DEFAULT-VALUE})")
  int capacity;

  @Option(names = "--flood-factor", defaultValue = "10",
      description = "blocks the flood puts, in multiples of its quota (default: ${DEFAULT-VALUE})")
  int floodFactor;

  @Option(names = "--out", description = "CSV file for the results")
  Path out;

  /** Which tenants are busy. */
  enum Scenario {
    ALL_BUSY(true, true, true, false), FLOOD_IDLE(true, true, false, false),
    QUOTED_IDLE(false, true, true, false), QUOTED_ALONE(true, false, false, false),
    /** The tenant without a quota floods instead of replaying, as much as the flood would. */
    OTHERS_FLOOD(true, false, false, true);

    final boolean quoted;
    final boolean others;
    final boolean flood;
    final boolean othersFlood;

    Scenario(boolean quoted, boolean others, boolean flood, boolean othersFlood) {
      this.quoted = quoted;
      this.others = others;
      this.flood = flood;
      this.othersFlood = othersFlood;
    }
  }

  enum Design {
    PARTITIONS, CAPS, LENDING
  }

  /** The hit ratios of a scenario under a design; NaN for a tenant that was idle. */
  record Result(Design design, Scenario scenario, double quoted, double others) {}

  private static final int QUOTED = 0;
  private static final int OTHERS = 1;
  private static final int FLOOD = 2;

  public static void main(String[] args) {
    System.exit(new CommandLine(new QuotaDesigns()).execute(args));
  }

  @Override
  public Integer call() throws IOException {
    MooncakeTrace quoted = MooncakeTrace.load(quotedTrace);
    MooncakeTrace others = MooncakeTrace.load(othersTrace);
    List<Result> results = new ArrayList<>();
    System.out.printf(Locale.ROOT, "%-11s %-13s %8s %8s%n", "design", "scenario", "quoted",
        "others");
    for (Scenario scenario : Scenario.values()) {
      for (Design design : Design.values()) {
        Result r = run(quoted, others, design, scenario);
        results.add(r);
        System.out.printf(Locale.ROOT, "%-11s %-13s %8.4f %8.4f%n", design, scenario, r.quoted(),
            r.others());
      }
    }
    if (out != null) {
      if (out.getParent() != null) {
        Files.createDirectories(out.getParent());
      }
      try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out))) {
        w.println("design,scenario,capacity,flood_factor,quoted_hit_ratio,others_hit_ratio");
        for (Result r : results) {
          w.printf(Locale.ROOT, "%s,%s,%d,%d,%.6f,%.6f%n", r.design(), r.scenario(), capacity,
              floodFactor, r.quoted(), r.others());
        }
      }
      System.out.println("wrote " + out);
    }
    return 0;
  }

  /** Replays the busy tenants' requests interleaved, each spread evenly over the run. */
  Result run(MooncakeTrace quotedTrace, MooncakeTrace othersTrace, Design design,
      Scenario scenario) {
    long[] quotas = {capacity / 2, -1, capacity / 4};
    Model model = switch (design) {
      case PARTITIONS -> new Partitions(capacity, quotas);
      case CAPS -> new Caps(capacity, quotas);
      case LENDING -> new Lending(capacity, quotas);
    };
    int[][] q = scenario.quoted ? quotedTrace.requests() : new int[0][];
    int[][] o = scenario.others ? othersTrace.requests() : new int[0][];
    long floodBlocks = scenario.flood || scenario.othersFlood
        ? (long) floodFactor * quotas[FLOOD] : 0;
    int flooder = scenario.othersFlood ? OTHERS : FLOOD;
    int steps = Math.max(q.length, o.length);
    long[] hits = new long[2];
    long[] accesses = new long[2];
    int nextQ = 0;
    int nextO = 0;
    long flooded = 0;
    for (int step = 0; step < steps; step++) {
      for (long due = (long) q.length * (step + 1) / steps; nextQ < due; nextQ++) {
        hits[QUOTED] += serve(model, QUOTED, q[nextQ]);
        accesses[QUOTED] += q[nextQ].length;
      }
      for (long due = (long) o.length * (step + 1) / steps; nextO < due; nextO++) {
        hits[OTHERS] += serve(model, OTHERS, o[nextO]);
        accesses[OTHERS] += o[nextO].length;
      }
      for (long due = floodBlocks * (step + 1) / steps; flooded < due; flooded++) {
        model.put(flooder, flooded);
      }
    }
    return new Result(design, scenario, (double) hits[QUOTED] / accesses[QUOTED],
        (double) hits[OTHERS] / accesses[OTHERS]);
  }

  /** The prefix of {@code ids} the model holds (each a use), then a put of each block after it. */
  private static int serve(Model model, int tenant, int[] ids) {
    int hits = PrefixCacheModel.leadingHits(ids, id -> model.use(tenant, id));
    for (int i = hits; i < ids.length; i++) {
      model.put(tenant, ids[i]);
    }
    return hits;
  }

  /** Blocks by tenant and id, one slot each. */
  interface Model {
    /** Whether the block is held; a use of it if so. */
    boolean use(int tenant, long id);

    void put(int tenant, long id);
  }

  private static long key(int tenant, long id) {
    return (long) tenant << 48 | id;
  }

  /** An LRU per tenant with a quota, bounded by it; one for the others, bounded by the rest. */
  static class Partitions implements Model {
    final List<Lru> parts = new ArrayList<>();

    Partitions(long capacity, long[] quotas) {
      long quoted = 0;
      for (long quota : quotas) {
        quoted += Math.max(0, quota);
      }
      for (long quota : quotas) {
        parts.add(new Lru(quota < 0 ? capacity - quoted : quota));
      }
    }

    /** Partitions whose tenants without a quota (a negative one) are unbounded. */
    Partitions(long[] quotas) {
      for (long quota : quotas) {
        parts.add(new Lru(quota < 0 ? Long.MAX_VALUE : quota));
      }
    }

    @Override
    public boolean use(int tenant, long id) {
      return parts.get(tenant).map.get(key(tenant, id)) != null;
    }

    @Override
    public void put(int tenant, long id) {
      Lru lru = parts.get(tenant);
      lru.map.put(key(tenant, id), Boolean.TRUE);
      lru.trim();
    }
  }

  /** One LRU over every block; a tenant at its cap evicts its own least recent block. */
  static final class Caps implements Model {
    private final long capacity;
    private final long[] caps;
    private final long[] held;
    /** Every block, least recent first. */
    private final LinkedHashMap<Long, Integer> all = new LinkedHashMap<>(16, 0.75f, true);
    /** Each tenant's blocks, least recent first. */
    private final List<LinkedHashMap<Long, Boolean>> own = new ArrayList<>();

    Caps(long capacity, long[] caps) {
      this.capacity = capacity;
      this.caps = caps;
      this.held = new long[caps.length];
      for (int i = 0; i < caps.length; i++) {
        own.add(new LinkedHashMap<>(16, 0.75f, true));
      }
    }

    @Override
    public boolean use(int tenant, long id) {
      long key = key(tenant, id);
      if (all.get(key) == null) {
        return false;
      }
      own.get(tenant).get(key);
      return true;
    }

    @Override
    public void put(int tenant, long id) {
      long key = key(tenant, id);
      if (all.put(key, tenant) == null) {
        own.get(tenant).put(key, Boolean.TRUE);
        held[tenant]++;
      } else {
        own.get(tenant).get(key);
      }
      if (caps[tenant] >= 0 && held[tenant] > caps[tenant]) {
        evict(own.get(tenant).keySet().iterator().next());
      }
      while (all.size() > capacity) {
        evict(all.keySet().iterator().next());
      }
    }

    private void evict(long key) {
      int tenant = all.remove(key);
      own.get(tenant).remove(key);
      held[tenant]--;
    }
  }

  /**
   * Partitions that lend: an LRU per tenant with a quota, bounded by it, and one for the others,
   * bounded by what the quotas' blocks leave of the capacity. A tenant with a quota that needs
   * room below its quota takes it back from the others' least recent blocks; the others never
   * take a block of a tenant with a quota.
   */
  static final class Lending extends Partitions {
    private final long capacity;

    Lending(long capacity, long[] quotas) {
      super(quotas);
      this.capacity = capacity;
    }

    @Override
    public void put(int tenant, long id) {
      super.put(tenant, id);
      long total = 0;
      for (Lru part : parts) {
        total += part.map.size();
      }
      for (; total > capacity; total--) {
        Lru borrower = parts.get(OTHERS).map.isEmpty() ? parts.get(tenant) : parts.get(OTHERS);
        Iterator<Long> oldest = borrower.map.keySet().iterator();
        oldest.next();
        oldest.remove();
      }
    }
  }

  /** A bounded LRU of keys. */
  private static final class Lru {
    final long bound;
    final LinkedHashMap<Long, Boolean> map = new LinkedHashMap<>(16, 0.75f, true);

    Lru(long bound) {
      this.bound = bound;
    }

    void trim() {
      Iterator<Long> oldest = map.keySet().iterator();
      while (map.size() > bound) {
        oldest.next();
        oldest.remove();
      }
    }
  }
}
