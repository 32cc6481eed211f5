package dev.kvcache.jlama;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.safetensors.Config;
import com.github.tjake.jlama.safetensors.prompt.PromptContext;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.IntConsumer;

/**
 * Jlama's generation loop over a {@link PrefixCache}: the prompt's stored prefix is loaded and
 * the rest prefilled ({@link PrefixCache#prefill}), its new whole blocks stored once the first
 * token is sampled, then tokens are generated one forward pass at a time, and the blocks they
 * complete stored at the end, so that a prompt which continues this one (the next turn of a
 * conversation) finds them.
 *
 * <p>Each call works in a KV buffer of its own, in memory, freed when it returns; calls may run
 * concurrently (each forward pass uses all the cores Jlama is given).
 */
public final class CachedGenerator {

  private final AbstractModel model;
  private final PrefixCache prefixes;
  private final KvBufferCache buffers;

  public CachedGenerator(PrefixCache prefixes) {
    this.prefixes = Objects.requireNonNull(prefixes, "prefixes");
    this.model = prefixes.model();
    this.buffers = new KvBufferCache(model);
  }

  public PrefixCache prefixes() {
    return prefixes;
  }

  /** {@code prompt}'s token ids as the model takes them: its BOS token first, if it has one. */
  public int[] encode(String prompt) {
    return model.encodePrompt(PromptContext.of(prompt));
  }

  /**
   * The text of {@code tokens}, each decoded in turn as Jlama's own generation decodes them
   * (without trimming the first one's leading space, so that the text encodes to the same tokens
   * again with a tokenizer that round-trips).
   */
  public String text(int[] tokens) {
    StringBuilder text = new StringBuilder();
    for (int t : tokens) {
      if (!model.getTokenizer().getModel().isSpecialToken(t)) {
        text.append(model.getTokenizer().decode(t));
      }
    }
    return text.toString();
  }

  /** {@link #generate(int[], float, int, IntConsumer)} of {@code prompt}'s tokens. */
  public Generation generate(String prompt, float temperature, int maxTokens) {
    return generate(encode(prompt), temperature, maxTokens, token -> { });
  }

  /**
   * Generates up to {@code maxTokens} tokens after {@code prompt}.
   *
   * @param prompt the prompt's token ids ({@link #encode})
   * @param temperature 0 for the most likely token every time (greedy), more for sampling
   * @param maxTokens the most tokens to generate, at least 1
   * @param onToken called with each token as it is generated, the stop token excepted
   */
  public Generation generate(int[] prompt, float temperature, int maxTokens,
      IntConsumer onToken) {
    if (maxTokens < 1) {
      throw new IllegalArgumentException("maxTokens is at least 1, not " + maxTokens);
    }
    Config c = model.getConfig();
    int blockTokens = prefixes.layout().blockTokens();
    long start = System.nanoTime();
    try (KvBufferCache.KvBuffer kv = buffers.getEphemeralKvBuffer();
        AbstractTensor logits = model.makeDenseTensor(c.vocabularySize)) {
      Prefill prefill = prefixes.prefill(prompt, kv);
      int next;
      try (AbstractTensor output = prefill.output()) {
        next = model.sample(output.slice(output.shape().first() - 1), temperature,
            ThreadLocalRandom.current().nextFloat(), logits);
      }
      Duration firstToken = Duration.ofNanos(System.nanoTime() - start);
      int stored = prefixes.store(prompt, kv, prefill.presentBlocks());

      // room for the tokens to generate; the last one needs no place in kv
      int[] tokens = Arrays.copyOf(prompt, Math.min(c.contextLength + 1,
          prompt.length + maxTokens));
      int position = prompt.length; // the next token's, and the count of tokens in kv
      Generation.Finish finish = Generation.Finish.LENGTH;
      while (true) {
        if (c.eosTokens.contains(next)) {
          finish = Generation.Finish.STOP;
          break;
        }
        onToken.accept(next);
        tokens[position] = next;
        if (position + 1 == tokens.length) {
          break;
        }
        try (AbstractTensor output = model.forward(next, position, kv, Optional.empty())) {
          next = model.sample(output, temperature, ThreadLocalRandom.current().nextFloat(),
              logits);
        }
        position++;
      }
      int generated = finish == Generation.Finish.STOP ? position - prompt.length
          : position + 1 - prompt.length;
      // kv holds the prompt and every generated token but the last: the blocks they complete
      stored += prefixes.store(Arrays.copyOf(tokens, position), kv,
          prompt.length / blockTokens);
      int[] out = Arrays.copyOfRange(tokens, prompt.length, prompt.length + generated);
      return new Generation(out, text(out), finish, prompt.length, prefill.loadedTokens(),
          firstToken, stored);
    }
  }
}
