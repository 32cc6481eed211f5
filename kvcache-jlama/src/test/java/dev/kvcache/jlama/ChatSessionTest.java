package dev.kvcache.jlama;

import static org.assertj.core.api.Assertions.assertThat;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;
import dev.kvcache.KvCache;
import dev.kvcache.tiered.KvCacheBuilder;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A conversation's every turn loads the keys and values of every earlier turn, prompt and reply,
 * and generates what it would computing them.
 */
class ChatSessionTest {

  static final int BLOCK_TOKENS = 16;

  @TempDir static Path dir;
  static AbstractModel model;

  @BeforeAll
  static void load() throws IOException {
    Path files = TestModels.llama(dir.resolve("model"), TestModels.Shape.small(), 7);
    model = ModelSupport.loadModel(files.toFile(), DType.F32, DType.F32);
  }

  @AfterAll
  static void close() {
    model.close();
  }

  @Test
  void everyTurnReusesTheTurnsBeforeIt() {
    try (KvCache cache = KvCacheBuilder.newBuilder().ramBytes(256L << 20).build()) {
      CachedGenerator generator = new CachedGenerator(new PrefixCache(model, cache, "chat-model",
          BLOCK_TOKENS, LoadOrPrefill.alwaysLoad()));
      ChatSession chat = new ChatSession(generator, "You answer in one line.");
      int[] held = new int[0]; // the tokens whose keys and values the last turn stored
      for (String message : List.of("What is a KV cache?", "And a prefix key?",
          "Why are the keys chained?", "Thank you.")) {
        Generation reply = chat.send(message, 0f, 20);
        List<ChatSession.Message> history = chat.history();
        assertThat(history.get(history.size() - 1))
            .isEqualTo(new ChatSession.Message(ChatSession.Role.ASSISTANT, reply.text()));
        int[] prompt = generator.encode(ChatSession.prompt(generator,
            history.subList(0, history.size() - 1)));
        assertThat(reply.promptTokens()).isEqualTo(prompt.length);
        assertThat(PrefixCacheTest.sharedTokens(held, prompt))
            .as("the prompt starts with the last turn's prompt and reply").isEqualTo(held.length);
        assertThat(reply.loadedTokens()).as("turn %d", history.size() / 2)
            .isEqualTo(Math.min(held.length / BLOCK_TOKENS * BLOCK_TOKENS, prompt.length - 1));
        assertThat(reply.tokens()).isEqualTo(computed(prompt));
        int[] all = PrefixCacheTest.concat(prompt, reply.tokens());
        held = Arrays.copyOf(all, all.length
            - (reply.finish() == Generation.Finish.LENGTH ? 1 : 0));
      }
      assertThat(chat.history()).hasSize(9);
    }
  }

  private static int[] computed(int[] prompt) {
    try (KvCache empty = KvCacheBuilder.newBuilder().ramBytes(64L << 20).build()) {
      return new CachedGenerator(new PrefixCache(model, empty, "chat-model", BLOCK_TOKENS))
          .generate(prompt, 0f, 20, t -> { }).tokens();
    }
  }
}
