package dev.kvcache.langchain4j;

import dev.langchain4j.model.jlama.JlamaChatModel;
import dev.langchain4j.model.jlama.spi.JlamaChatModelBuilderFactory;

/**
 * LangChain4j's extension point for {@code JlamaChatModel.builder()}: found on the classpath
 * (listed in {@code META-INF/services}), it has that builder build a {@link KvCacheJlamaChatModel}
 * over the cache of {@link dev.kvcache.jlama.CacheSettings}.
 */
public final class KvCacheJlamaChatModelBuilderFactory implements JlamaChatModelBuilderFactory {

  @Override
  public JlamaChatModel.JlamaChatModelBuilder get() {
    return KvCacheJlamaChatModel.builder();
  }
}
