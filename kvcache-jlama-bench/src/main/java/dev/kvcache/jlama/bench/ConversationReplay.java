package dev.kvcache.jlama.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import dev.kvcache.KvCache;
import dev.kvcache.bench.trace.MooncakeTrace;
import dev.kvcache.jlama.LoadOrPrefill;
import dev.kvcache.jlama.Prefill;
import dev.kvcache.jlama.PrefixCache;
import dev.kvcache.jlama.TestModels;
import dev.kvcache.tiered.KvCacheBuilder;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Replays the turns of one conversation of Mooncake's conversation trace through a Jlama model
 * (random weights, {@link FirstTokenBenchmark#SHAPE}) with kvcache's prefix cache: each turn's
 * prompt is its trace blocks' tokens (each block id's tokens drawn from the id, so equal ids give
 * equal tokens), its time to first token taken with the blocks earlier turns stored loaded, and
 * with every token computed. The conversation is the trace's longest chain of requests each of
 * which starts with the whole blocks of the one before; the trace's 512-token blocks are scaled to {@code
 * --block-tokens} so that a computed turn takes seconds, not minutes, on two cores.
 */
@Command(name = "conversation-replay", mixinStandardHelpOptions = true,
    description = "Time to first token of a Mooncake conversation's turns, their earlier turns "
        + "loaded from kvcache against computed.")
public final class ConversationReplay implements Callable<Integer> {

  @Option(names = "--trace", defaultValue = "../shared/data/traces/"
      + "mooncake_conversation_trace.jsonl.zst", description = "default: ${DEFAULT-VALUE}")
  Path trace;

  @Option(names = "--turns", defaultValue = "8", description = "the most turns to replay")
  int turns;

  @Option(names = "--block-tokens", defaultValue = "64", description = "tokens of one of the "
      + "trace's blocks (512 in the trace; default ${DEFAULT-VALUE})")
  int traceBlockTokens;

  @Option(names = "--repeats", defaultValue = "3", description = "runs of the whole "
      + "conversation, each over an empty cache (default ${DEFAULT-VALUE})")
  int repeats;

  @Option(names = "--out", description = "a JSON file of the results")
  Path out;

  public static void main(String[] args) {
    System.exit(new CommandLine(new ConversationReplay()).execute(args));
  }

  /** The trace's longest chain of requests each extending the one before, first turn first. */
  static List<int[]> conversation(MooncakeTrace trace, int most) {
    int[][] requests = trace.requests();
    int[] parent = new int[requests.length];
    int[] depth = new int[requests.length];
    int deepest = 0;
    for (int i = 0; i < requests.length; i++) {
      parent[i] = -1;
      depth[i] = 1;
      for (int j = i - 1; j >= 0; j--) {
        // a turn's prompt holds the one before's and its reply, so it is longer and starts with
        // every block of the one before but its last, partly filled, which the reply completes;
        // two blocks at least, more than a shared system prompt
        int whole = requests[j].length - 1;
        if (whole >= 2 && requests[j].length < requests[i].length
            && Arrays.equals(requests[j], 0, whole, requests[i], 0, whole)) {
          parent[i] = j;
          depth[i] = depth[j] + 1;
          break;
        }
      }
      if (depth[i] > depth[deepest]) {
        deepest = i;
      }
    }
    List<int[]> chain = new ArrayList<>();
    for (int r = deepest; r >= 0; r = parent[r]) {
      chain.add(0, requests[r]);
    }
    return chain.subList(0, Math.min(most, chain.size()));
  }

  @Override
  public Integer call() throws Exception {
    List<int[]> chain = conversation(MooncakeTrace.load(trace), turns);
    Path dir = Files.createTempDirectory("kvcache-replay");
    File files = TestModels.llama(dir.resolve("model"), FirstTokenBenchmark.SHAPE, 11).toFile();
    AbstractModel model = ModelSupport.loadModel(files, DType.F32, DType.F32);
    KvBufferCache buffers = new KvBufferCache(model);
    System.out.printf("%d turns of %s, blocks of %d tokens, model %s%n", chain.size(),
        trace.getFileName(), traceBlockTokens, FirstTokenBenchmark.SHAPE);
    // warm-up: the JIT compiles the forward pass before the first timed turn
    try (KvCache none = KvCacheBuilder.newBuilder().ramBytes(64L << 20).build()) {
      firstToken(model, buffers, new PrefixCache(model, none, "warm-up", 32), tokens(chain.get(0)),
          false);
    }
    long[][] cached = new long[chain.size()][repeats];
    long[][] computed = new long[chain.size()][repeats];
    int[] loaded = new int[chain.size()];
    for (int r = 0; r < repeats; r++) {
      // both caches small: a RAM tier zeroes its memory in the background when it is built,
      // which would take a core from the first turn (a conversation's blocks take 12 MiB)
      try (KvCache cache = KvCacheBuilder.newBuilder().ramBytes(128L << 20).build();
          KvCache none = KvCacheBuilder.newBuilder().ramBytes(64L << 20).build()) {
        PrefixCache prefixes = new PrefixCache(model, cache, "replay", 32,
            LoadOrPrefill.alwaysLoad());
        PrefixCache nothing = new PrefixCache(model, none, "replay", 32);
        for (int t = 0; t < chain.size(); t++) {
          int[] prompt = tokens(chain.get(t));
          FirstToken withCache = firstToken(model, buffers, prefixes, prompt, true);
          loaded[t] = withCache.loadedTokens();
          cached[t][r] = withCache.nanos();
          computed[t][r] = firstToken(model, buffers, nothing, prompt, false).nanos();
          System.out.printf("repeat %d turn %d: %d tokens, %d loaded: %.0f ms, computed %.0f ms%n",
              r + 1, t + 1, prompt.length, loaded[t], cached[t][r] / 1e6, computed[t][r] / 1e6);
        }
      }
    }
    ObjectNode results = new ObjectMapper().createObjectNode().put("trace",
        trace.getFileName().toString()).put("traceBlockTokens", traceBlockTokens)
        .put("model", FirstTokenBenchmark.SHAPE.toString()).put("repeats", repeats);
    ArrayNode rows = results.putArray("turns");
    System.out.println("turn  prompt  loaded  first token loaded (ms)  computed (ms)  ratio");
    for (int t = 0; t < chain.size(); t++) {
      double c = median(cached[t]) / 1e6;
      double p = median(computed[t]) / 1e6;
      int length = tokens(chain.get(t)).length;
      System.out.printf("%4d  %6d  %6d  %23.0f  %13.0f  %5.3f%n", t + 1, length, loaded[t], c, p,
          c / p);
      ObjectNode row = rows.addObject().put("turn", t + 1).put("promptTokens", length)
          .put("loadedTokens", loaded[t]).put("firstTokenLoadedMs", c)
          .put("firstTokenComputedMs", p);
      Arrays.stream(cached[t]).forEach(n -> row.withArray("loadedRunsMs").add(n / 1e6));
      Arrays.stream(computed[t]).forEach(n -> row.withArray("computedRunsMs").add(n / 1e6));
    }
    if (out != null) {
      new ObjectMapper().writerWithDefaultPrettyPrinter().writeValue(out.toFile(), results);
    }
    model.close();
    return 0;
  }

  /** A turn's tokens: each trace block's, drawn from its id. */
  private int[] tokens(int[] blockIds) {
    int[] tokens = new int[blockIds.length * traceBlockTokens];
    for (int b = 0; b < blockIds.length; b++) {
      SplittableRandom random = new SplittableRandom(blockIds[b]);
      for (int i = 0; i < traceBlockTokens; i++) {
        tokens[b * traceBlockTokens + i] = 3 + random.nextInt(TestModels.VOCABULARY - 3);
      }
    }
    return tokens;
  }

  /** The prompt tokens a first token loaded, and the time it took. */
  private record FirstToken(int loadedTokens, long nanos) {}

  /**
   * The first token after {@code prompt}, timed: the lookup, loads and prefill, and its sampling;
   * then, untimed, the prompt's new blocks stored if {@code store}.
   */
  private static FirstToken firstToken(AbstractModel model, KvBufferCache buffers,
      PrefixCache prefixes, int[] prompt, boolean store) {
    try (KvBufferCache.KvBuffer kv = buffers.getEphemeralKvBuffer();
        AbstractTensor logits = model.makeDenseTensor(model.getConfig().vocabularySize)) {
      long start = System.nanoTime();
      Prefill p = prefixes.prefill(prompt, kv);
      try (AbstractTensor output = p.output()) {
        model.sample(output.slice(output.shape().first() - 1), 0f, 0f, logits);
      }
      long nanos = System.nanoTime() - start;
      if (store) {
        prefixes.store(prompt, kv, p.loadedTokens() / prefixes.layout().blockTokens());
      }
      return new FirstToken(p.loadedTokens(), nanos);
    }
  }

  private static double median(long[] values) {
    long[] sorted = values.clone();
    Arrays.sort(sorted);
    return sorted.length % 2 == 1 ? sorted[sorted.length / 2]
        : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2.0;
  }
}
