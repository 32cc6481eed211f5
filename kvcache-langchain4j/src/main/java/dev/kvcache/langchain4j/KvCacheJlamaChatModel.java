package dev.kvcache.langchain4j;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.safetensors.prompt.PromptSupport;
import dev.kvcache.KvCache;
import dev.kvcache.jlama.CacheSettings;
import dev.kvcache.jlama.CachedGenerator;
import dev.kvcache.jlama.Generation;
import dev.kvcache.jlama.PrefixCache;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.Content;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.TextContent;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.ChatResponseMetadata;
import dev.langchain4j.model.jlama.JlamaChatModel;
import dev.langchain4j.model.output.FinishReason;
import dev.langchain4j.model.output.TokenUsage;
import java.lang.reflect.Field;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;

/**
 * LangChain4j's {@link JlamaChatModel} whose prompts' prefixes are kept in kvcache: a request's
 * prompt (a conversation's whole history, as LangChain4j sends it every turn) loads the keys and
 * values stored for its leading blocks, and only the rest is computed; the blocks it computes and
 * the reply's are stored for the next turn. Replies are the ones {@link JlamaChatModel} gives,
 * token for token at temperature 0. Requests with tools go to {@link JlamaChatModel}'s own
 * generation, uncached.
 *
 * <p>Built by {@code JlamaChatModel.builder()} when this module is on the classpath ({@link
 * KvCacheJlamaChatModelBuilderFactory}), with the cache of {@link CacheSettings}, or by {@link
 * #builder()} with a cache of the application's.
 */
public class KvCacheJlamaChatModel extends JlamaChatModel {

  private final AbstractModel model;
  private final CachedGenerator generator;
  private final float temperature;
  private final int maxTokens;
  private final AtomicLong promptTokens = new AtomicLong();
  private final AtomicLong loadedTokens = new AtomicLong();

  KvCacheJlamaChatModel(Builder b, KvCache cache, int blockTokens) {
    super(b.modelCachePath, b.modelName, b.authToken, b.threadCount, b.quantizeModelAtRuntime,
        b.workingDirectory, b.workingQuantizedType, b.temperature, b.maxTokens);
    this.model = loadedModel(this);
    this.generator = new CachedGenerator(new PrefixCache(model, cache, b.modelName,
        blockTokens));
    this.temperature = b.temperature == null ? 0.3f : b.temperature;
    this.maxTokens = b.maxTokens == null ? model.getConfig().contextLength : b.maxTokens;
  }

  /** A builder of a model over the cache given to it, or {@link CacheSettings}'s. */
  public static Builder builder() {
    return new Builder();
  }

  /** The model {@link JlamaChatModel}'s constructor loaded, which it keeps to itself. */
  private static AbstractModel loadedModel(JlamaChatModel chat) {
    try {
      Field f = JlamaChatModel.class.getDeclaredField("model");
      f.setAccessible(true);
      return (AbstractModel) f.get(chat);
    } catch (ReflectiveOperationException | ClassCastException e) {
      throw new IllegalStateException("this langchain4j-jlama keeps its model otherwise than "
          + "kvcache-langchain4j was built for: use the langchain4j-jlama version it names", e);
    }
  }

  /** The generator whose prefix cache the model's requests go through. */
  public CachedGenerator generator() {
    return generator;
  }

  /** The prompt tokens of every request so far. */
  public long promptTokens() {
    return promptTokens.get();
  }

  /** The prompt tokens of every request so far whose keys and values came from the cache. */
  public long loadedTokens() {
    return loadedTokens.get();
  }

  @Override
  public ChatResponse chat(ChatRequest request) {
    ChatRequestParameters parameters = request.parameters();
    if (!parameters.toolSpecifications().isEmpty() || model.promptSupport().isEmpty()) {
      return super.chat(request); // Jlama's own tool calls, or its refusal
    }
    PromptSupport.Builder prompt = model.promptSupport().get().builder();
    for (ChatMessage message : request.messages()) {
      switch (message.type()) {
        case SYSTEM -> prompt.addSystemMessage(((SystemMessage) message).text());
        case USER -> prompt.addUserMessage(text((UserMessage) message));
        case AI -> {
          AiMessage ai = (AiMessage) message;
          if (ai.hasToolExecutionRequests()) {
            return super.chat(request);
          }
          prompt.addAssistantMessage(ai.text());
        }
        default -> {
          return super.chat(request);
        }
      }
    }
    int[] tokens = generator.encode(prompt.build().getPrompt());
    float t = parameters.temperature() != null ? parameters.temperature().floatValue()
        : temperature;
    // as Jlama counts its limit: positions, the prompt's too, and one token past them
    int limit = parameters.maxOutputTokens() != null ? parameters.maxOutputTokens()
        : Math.max(1, maxTokens - tokens.length + 1);
    Generation g = generator.generate(tokens, t, limit, token -> { });
    promptTokens.addAndGet(g.promptTokens());
    loadedTokens.addAndGet(g.loadedTokens());
    return ChatResponse.builder().aiMessage(AiMessage.from(g.text()))
        .metadata(ChatResponseMetadata.builder()
            .tokenUsage(new TokenUsage(g.promptTokens(), g.tokens().length))
            .finishReason(g.finish() == Generation.Finish.STOP ? FinishReason.STOP
                : FinishReason.LENGTH)
            .build())
        .build();
  }

  private static String text(UserMessage message) {
    StringBuilder text = new StringBuilder();
    for (Content content : message.contents()) {
      if (!(content instanceof TextContent t)) {
        throw new UnsupportedOperationException("Unsupported content type: " + content.type());
      }
      text.append(t.text());
    }
    return text.toString();
  }

  /**
   * {@link JlamaChatModel}'s builder, with the cache to use ({@link #kvCache}, else {@link
   * CacheSettings}'s) and the tokens per block ({@link #blockTokens}, else the settings').
   */
  public static class Builder extends JlamaChatModel.JlamaChatModelBuilder {
    private Path modelCachePath;
    private String modelName;
    private String authToken;
    private Integer threadCount;
    private Boolean quantizeModelAtRuntime;
    private Path workingDirectory;
    private DType workingQuantizedType;
    private Float temperature;
    private Integer maxTokens;
    private KvCache cache;
    private Integer blockTokens;

    /** The cache the model keeps its prompts' prefixes in, instead of the settings'. */
    public Builder kvCache(KvCache cache) {
      this.cache = cache;
      return this;
    }

    /** Tokens per block, instead of the settings'. */
    public Builder blockTokens(int blockTokens) {
      this.blockTokens = blockTokens;
      return this;
    }

    @Override
    public Builder modelCachePath(Path modelCachePath) {
      this.modelCachePath = modelCachePath;
      return this;
    }

    @Override
    public Builder modelName(String modelName) {
      this.modelName = modelName;
      return this;
    }

    @Override
    public Builder authToken(String authToken) {
      this.authToken = authToken;
      return this;
    }

    @Override
    public Builder threadCount(Integer threadCount) {
      this.threadCount = threadCount;
      return this;
    }

    @Override
    public Builder quantizeModelAtRuntime(Boolean quantizeModelAtRuntime) {
      this.quantizeModelAtRuntime = quantizeModelAtRuntime;
      return this;
    }

    @Override
    public Builder workingDirectory(Path workingDirectory) {
      this.workingDirectory = workingDirectory;
      return this;
    }

    @Override
    public Builder workingQuantizedType(DType workingQuantizedType) {
      this.workingQuantizedType = workingQuantizedType;
      return this;
    }

    @Override
    public Builder temperature(Float temperature) {
      this.temperature = temperature;
      return this;
    }

    @Override
    public Builder maxTokens(Integer maxTokens) {
      this.maxTokens = maxTokens;
      return this;
    }

    @Override
    public KvCacheJlamaChatModel build() {
      return new KvCacheJlamaChatModel(this, cache != null ? cache : CacheSettings.shared(),
          blockTokens != null ? blockTokens : CacheSettings.blockTokens());
    }
  }
}
