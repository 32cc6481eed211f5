/**
 * LangChain4j's Jlama chat model with kvcache's prefix cache. On the classpath, this module's
 * {@link dev.kvcache.langchain4j.KvCacheJlamaChatModelBuilderFactory} is found by LangChain4j's
 * own extension point, so that {@code JlamaChatModel.builder()} builds a {@link
 * dev.kvcache.langchain4j.KvCacheJlamaChatModel}: the application's code is unchanged, and every
 * request's prompt (a conversation's whole history, as LangChain4j sends it) loads the keys and
 * values stored for its prefix. The cache is configured by system properties or environment
 * variables ({@link dev.kvcache.jlama.CacheSettings}), or given to the builder.
 */
package dev.kvcache.langchain4j;
