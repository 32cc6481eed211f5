package dev.kvcache.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.KvCache;
import dev.kvcache.client.RemoteTier;
import dev.kvcache.jlama.TestModels;
import dev.kvcache.server.TestServer;
import dev.kvcache.tiered.KvCacheBuilder;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.jlama.JlamaChatModel;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An application's unchanged LangChain4j code ({@code JlamaChatModel.builder()}) gets the prefix
 * cache from this module on its classpath, configured by a system property; a conversation's
 * every turn loads the earlier turns, and the replies are Jlama's own.
 */
class KvCacheJlamaChatModelTest {

  static final String MODEL = "kvcache/test-model";
  static final int MAX_TOKENS = 1024;

  @TempDir static Path models;

  @BeforeAll
  static void writeModel() throws IOException {
    // where LangChain4j's Jlama registry looks for owner/name, marked as downloaded
    Path dir = TestModels.llama(models.resolve("kvcache_test-model"), TestModels.Shape.small(), 7);
    Files.createFile(dir.resolve(".finished"));
  }

  @Test
  void jlamasBuilderBuildsTheCachedModelOverTheConfiguredServer() {
    try (TestServer server = TestServer.start(null, Map.of())) {
      System.setProperty("kvcache.server", "127.0.0.1:" + server.port());
      System.setProperty("kvcache.block-tokens", "16");
      try {
        JlamaChatModel built = JlamaChatModel.builder().modelCachePath(models).modelName(MODEL)
            .temperature(0f).maxTokens(MAX_TOKENS).build();
        assertThat(built).isInstanceOf(KvCacheJlamaChatModel.class);
        KvCacheJlamaChatModel cached = (KvCacheJlamaChatModel) built;
        assertThat(cached.generator().prefixes().cache()).isInstanceOf(RemoteTier.class);
        converse(cached, new JlamaChatModel(models, MODEL, null, null, null, null, null, 0f,
            MAX_TOKENS));
      } finally {
        System.clearProperty("kvcache.server");
        System.clearProperty("kvcache.block-tokens");
      }
    }
  }

  @Test
  void aCacheGivenToTheBuilderIsTheOneUsed() {
    try (KvCache cache = KvCacheBuilder.newBuilder().ramBytes(64L << 20).build()) {
      KvCacheJlamaChatModel model = KvCacheJlamaChatModel.builder().kvCache(cache)
          .blockTokens(16).modelCachePath(models).modelName(MODEL).temperature(0f)
          .maxTokens(MAX_TOKENS).build();
      assertThat(model.generator().prefixes().cache()).isSameAs(cache);
      ChatResponse r = model.chat(List.of(UserMessage.from("What is a KV cache?")));
      assertThat(r.tokenUsage().inputTokenCount()).isPositive();
      assertThat(r.aiMessage().text()).isNotEmpty();
    }
  }

  /**
   * Three turns, each sending the whole history as LangChain4j does: each turn after the first
   * loads the turns before it, and every reply is the plain Jlama model's.
   */
  private static void converse(KvCacheJlamaChatModel cached, ChatModel plain) {
    List<ChatMessage> history = new ArrayList<>(List.of(
        SystemMessage.from("You answer in one line.")));
    long loaded = 0;
    for (String message : List.of("What is a KV cache?", "And a prefix key?", "Thank you.")) {
      history.add(UserMessage.from(message));
      ChatResponse reply = cached.chat(history);
      assertThat(reply.aiMessage().text()).isEqualTo(plain.chat(history).aiMessage().text())
          .isNotEmpty();
      if (history.size() > 2) {
        assertThat(cached.loadedTokens()).as("turn %d loads the turns before it",
            history.size() / 2).isGreaterThan(loaded);
      }
      loaded = cached.loadedTokens();
      history.add(AiMessage.from(reply.aiMessage().text()));
    }
    assertThat(cached.loadedTokens()).isLessThan(cached.promptTokens());
  }
}
