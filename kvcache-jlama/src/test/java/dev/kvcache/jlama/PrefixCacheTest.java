package dev.kvcache.jlama;

import static org.assertj.core.api.Assertions.assertThat;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.safetensors.prompt.PromptContext;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import dev.kvcache.KvCache;
import dev.kvcache.client.RemoteTier;
import dev.kvcache.client.RemoteTierConfig;
import dev.kvcache.disk.DiskTier;
import dev.kvcache.disk.DiskTierConfig;
import dev.kvcache.disk.SyncPolicy;
import dev.kvcache.server.TestServer;
import dev.kvcache.tiered.KvCacheBuilder;
import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Jlama model (random weights, {@link TestModels}) with its prompts' prefixes loaded from
 * kvcache generates what it generates computing them: the same greedy tokens, and next-token
 * probabilities within {@link #TOLERANCE}, for prompts that share nothing, part of, and all but
 * the last token of a stored prompt; over the embedded cache, the disk tier and a real
 * kvcache-server. Blocks damaged in the disk tier's files or in the server's memory are never
 * loaded: they are computed again, and the tokens are the same.
 */
class PrefixCacheTest {

  /** The largest difference allowed between next-token probabilities, loaded or computed. */
  static final float TOLERANCE = 1e-5f;
  static final int BLOCK_TOKENS = 16;
  static final int NEW_TOKENS = 24;
  static final String TEXT = "The cache keeps the keys and values of every block of a prompt, "
      + "so that a prompt which starts with the same tokens loads them instead of computing them. "
      + "Blocks are chained: each key hashes the one before it with its own tokens, and a block "
      + "is found only after every block before it.";

  @TempDir static Path dir;
  static AbstractModel model;

  @BeforeAll
  static void load() throws IOException {
    Path files = TestModels.llama(dir.resolve("model"), TestModels.Shape.small(), 1);
    model = ModelSupport.loadModel(files.toFile(), DType.F32, DType.F32);
  }

  @AfterAll
  static void close() {
    model.close();
  }

  @Test
  void theTokensGeneratedAreJlamasOwn() {
    try (KvCache cache = ram()) {
      int[] prompt = model.encodePrompt(PromptContext.of(TEXT));
      // Jlama's limit counts positions, the prompt's too, and it samples one token past it
      String jlama = model.generate(UUID.randomUUID(), PromptContext.of(TEXT), 0f,
          prompt.length + NEW_TOKENS, (token, time) -> { }).responseText;
      Generation ours = generator(cache).generate(TEXT, 0f, NEW_TOKENS + 1);
      assertThat(ours.tokens()).hasSize(NEW_TOKENS + 1);
      assertThat(ours.text()).isEqualTo(jlama);
    }
  }

  @Test
  void foundBlocksAreComputedWhenThatIsExpectedToBeFaster() {
    try (KvCache cache = ram()) {
      int[] prompt = model.encodePrompt(PromptContext.of(TEXT));
      int[] expected = generator(cache).generate(prompt, 0f, NEW_TOKENS, t -> { }).tokens();
      LoadOrPrefill decisions = LoadOrPrefill.measured();
      decisions.prefilled(1_000_000, 1_000); // a prefill of a million tokens a millisecond
      CachedGenerator fast = new CachedGenerator(new PrefixCache(model, cache, "test-model",
          BLOCK_TOKENS, decisions));
      Generation g = fast.generate(prompt, 0f, NEW_TOKENS, t -> { });
      int found = prompt.length / BLOCK_TOKENS;
      assertThat(g.loadedTokens()).isZero();
      assertThat(decisions.recomputed()).isEqualTo(found);
      assertThat(g.tokens()).isEqualTo(expected);
      int held = prompt.length + g.tokens().length - 1;
      assertThat(g.storedBlocks()).as("the prompt's blocks found are not stored again")
          .isEqualTo(held / BLOCK_TOKENS - found);
    }
  }

  @Test
  void promptsSharingNonePartOrAllButTheLastTokenGenerateWhatTheyWouldComputing() {
    try (KvCache cache = ram()) {
      CachedGenerator generator = generator(cache);
      int[] stored = generator.encode(TEXT);
      Generation first = generator.generate(stored, 0f, NEW_TOKENS, t -> { });
      assertThat(first.loadedTokens()).as("nothing stored yet").isZero();
      // the keys and values of the prompt and the generated tokens, the last one's excepted
      // unless it was the stop token's turn
      int held = stored.length + first.tokens().length
          - (first.finish() == Generation.Finish.LENGTH ? 1 : 0);
      assertThat(first.storedBlocks()).isEqualTo(held / BLOCK_TOKENS);
      assertThat(first.tokens()).isEqualTo(computed(stored));

      int[] again = stored.clone();
      int[] other = generator.encode("other words");
      int[] part = concat(Arrays.copyOf(stored, 75), Arrays.copyOfRange(other, 1, other.length));
      int[] allButLast = stored.clone();
      allButLast[allButLast.length - 1] = allButLast[allButLast.length - 1] == 40 ? 41 : 40;
      int[] none = generator.encode("Nothing of this prompt was stored before, not one block.");
      // whole blocks, the last token's too: that token's keys and values are loaded, then
      // computed again for its output
      int[] wholeBlocks = Arrays.copyOf(stored, stored.length / BLOCK_TOKENS * BLOCK_TOKENS);
      for (int[] prompt : List.of(again, part, allButLast, wholeBlocks, none)) {
        int shared = sharedTokens(stored, prompt);
        Generation g = generator.generate(prompt, 0f, NEW_TOKENS, t -> { });
        assertThat(g.loadedTokens()).as("shares %d tokens", shared)
            .isEqualTo(loadable(shared, prompt.length));
        assertThat(g.tokens()).as("shares %d tokens", shared).isEqualTo(computed(prompt));
      }
    }
  }

  @Test
  void nextTokenProbabilitiesAgreeWithinTheTolerance() {
    try (KvCache cache = ram()) {
      PrefixCache prefixes = new PrefixCache(model, cache, "test-model", BLOCK_TOKENS,
          LoadOrPrefill.alwaysLoad());
      int[] prompt = model.encodePrompt(PromptContext.of(TEXT));
      float[] computed = probabilities(prefixes, prompt, 0);
      prefixes.store(prompt, filled(prefixes, prompt), 0);
      float[] loaded = probabilities(prefixes, prompt, loadable(prompt.length, prompt.length));
      float worst = 0;
      for (int i = 0; i < computed.length; i++) {
        worst = Math.max(worst, Math.abs(computed[i] - loaded[i]));
      }
      assertThat(worst).isLessThanOrEqualTo(TOLERANCE);
    }
  }

  @Test
  void blocksDamagedInTheDiskTiersFilesAreComputedAgain() throws Exception {
    Path disk = dir.resolve("disk");
    try (DiskTier tier = DiskTier.open(DiskTierConfig.builder(disk, 64L << 20)
        .superBlockBytes(4L << 20).minFreeBytes(0).syncPolicy(SyncPolicy.NONE).build())) {
      CachedGenerator generator = generator(tier);
      int[] prompt = generator.encode(TEXT);
      int[] expected = generator.generate(prompt, 0f, NEW_TOKENS, t -> { }).tokens();
      int whole = loadable(prompt.length, prompt.length);
      assertThat(generator.generate(prompt, 0f, NEW_TOKENS, t -> { }).loadedTokens())
          .isEqualTo(whole);

      try (Stream<Path> files = Files.list(disk)) {
        for (Path f : files.filter(p -> p.getFileName().toString().endsWith(".kvsb")).toList()) {
          // the records after the first two blocks' (written in order, from the file's start)
          damageFrom(f, 3L * generator.prefixes().layout().blockBytes());
        }
      }
      Generation g = generator.generate(prompt, 0f, NEW_TOKENS, t -> { });
      assertThat(g.loadedTokens()).as("the blocks before the damage load, not those after")
          .isPositive().isLessThan(whole);
      assertThat(g.tokens()).isEqualTo(expected);
      Generation repaired = generator.generate(prompt, 0f, NEW_TOKENS, t -> { });
      assertThat(repaired.loadedTokens()).as("the blocks computed again were stored again")
          .isEqualTo(whole);
      assertThat(repaired.tokens()).isEqualTo(expected);
    }
  }

  @Test
  void overAKvcacheServerAndItsDamagedMemory() throws Exception {
    Path shm = Files.createDirectories(dir.resolve("server-ram"));
    try (TestServer server = TestServer.start(null, Map.of(
            "kvcache.cache.ram-shared-memory-dir", shm.toString()));
        RemoteTier remote = new RemoteTier(RemoteTierConfig.builder()
            .server("127.0.0.1", server.port()).build())) {
      CachedGenerator generator = generator(remote);
      int[] prompt = generator.encode(TEXT);
      int[] expected = computed(prompt);
      assertThat(generator.generate(prompt, 0f, NEW_TOKENS, t -> { }).tokens())
          .isEqualTo(expected);
      Generation loaded = generator.generate(prompt, 0f, NEW_TOKENS, t -> { });
      assertThat(loaded.loadedTokens()).isEqualTo(loadable(prompt.length, prompt.length));
      assertThat(loaded.tokens()).isEqualTo(expected);

      try (Stream<Path> files = Files.list(shm)) {
        for (Path f : files.filter(p -> p.getFileName().toString().startsWith("kvcache-ram-"))
            .toList()) {
          damageFrom(f, 0);
        }
      }
      Generation damaged = generator.generate(prompt, 0f, NEW_TOKENS, t -> { });
      assertThat(damaged.loadedTokens()).as("no damaged block is loaded").isZero();
      assertThat(damaged.tokens()).isEqualTo(expected);
      Generation repaired = generator.generate(prompt, 0f, NEW_TOKENS, t -> { });
      assertThat(repaired.loadedTokens()).as("the blocks computed again were stored again")
          .isEqualTo(loadable(prompt.length, prompt.length));
      assertThat(repaired.tokens()).isEqualTo(expected);
    }
  }

  static KvCache ram() {
    return KvCacheBuilder.newBuilder().ramBytes(256L << 20).build();
  }

  /** A generator over {@code cache} that loads every block it finds. */
  static CachedGenerator generator(KvCache cache) {
    return new CachedGenerator(new PrefixCache(model, cache, "test-model", BLOCK_TOKENS,
        LoadOrPrefill.alwaysLoad()));
  }

  /** The tokens generated after {@code prompt} with nothing stored: every token computed. */
  static int[] computed(int[] prompt) {
    try (KvCache empty = ram()) {
      Generation g = generator(empty).generate(prompt, 0f, NEW_TOKENS, t -> { });
      assertThat(g.loadedTokens()).isZero();
      assertThat(g.tokens()).as("a generation long enough to compare").hasSize(NEW_TOKENS);
      return g.tokens();
    }
  }

  /** The next token's probabilities after {@code prompt}, having loaded {@code loaded} tokens. */
  private static float[] probabilities(PrefixCache prefixes, int[] prompt, int loaded) {
    try (KvBufferCache.KvBuffer kv = new KvBufferCache(model).getEphemeralKvBuffer()) {
      Prefill p = prefixes.prefill(prompt, kv);
      assertThat(p.loadedTokens()).isEqualTo(loaded);
      try (AbstractTensor out = p.output()) {
        return model.getLogits(out.slice(out.shape().first() - 1));
      }
    }
  }

  /** A KV buffer holding {@code prompt}'s keys and values, computed. */
  private static KvBufferCache.KvBuffer filled(PrefixCache prefixes, int[] prompt) {
    KvBufferCache.KvBuffer kv = new KvBufferCache(model).getEphemeralKvBuffer();
    model.batchForward(prompt, 0, kv).close();
    return kv;
  }

  /** Flips a byte in every 4 KiB of {@code file} from {@code from}. */
  static void damageFrom(Path file, long from) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ,
        StandardOpenOption.WRITE)) {
      MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_WRITE, 0, ch.size());
      for (long at = from + 100; at < ch.size(); at += 4096) {
        m.put((int) at, (byte) (m.get((int) at) ^ 0x5A));
      }
      m.force();
    }
  }

  /**
   * The tokens of a prompt of {@code length} tokens not computed when its first {@code stored}
   * tokens' whole blocks are loaded: the last token is computed whatever is stored.
   */
  static int loadable(int stored, int length) {
    return Math.min(stored / BLOCK_TOKENS * BLOCK_TOKENS, length - 1);
  }

  static int sharedTokens(int[] a, int[] b) {
    int n = 0;
    while (n < a.length && n < b.length && a[n] == b[n]) {
      n++;
    }
    return n;
  }

  static int[] concat(int[] a, int[] b) {
    int[] r = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, r, a.length, b.length);
    return r;
  }
}
