package dev.kvcache.server;

import dev.kvcache.BlockWriter;
import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.server.cache.CacheFactory;
import dev.kvcache.spi.Tier;
import dev.kvcache.tiered.Durability;
import dev.kvcache.tiered.TieredCache;
import dev.kvcache.tiered.TieredCacheConfig;
import io.micronaut.context.annotation.Bean;
import io.micronaut.context.annotation.Context;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Replaces;
import io.micronaut.context.annotation.Requires;
import io.micronaut.context.annotation.Value;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.Optional;

/**
 * The server's cache (RAM over RAM) with writers whose commit never goes through at once ({@link
 * BlockWriter#tryCommit} is empty) and takes {@code test.commit-delay}, as a commit that waits
 * for a busy lock does: so that every PUT the fast paths take commits on the blocking threads.
 * Only when that setting is given.
 */
@Factory
@Requires(property = "test.commit-delay")
class WaitingCommits {

  @Context
  @Bean(preDestroy = "close")
  @Replaces(bean = Tier.class, factory = CacheFactory.class)
  Tier cache(@Value("${test.commit-delay}") Duration delay) {
    TieredCache cache = new TieredCache(
        RamTierConfig.ofCapacity(64L << 20).withMaxBlockBytes(8 << 20),
        new RamTier(RamTierConfig.ofCapacity(64L << 20).withMaxBlockBytes(8 << 20)),
        new TieredCacheConfig(8, Duration.ofSeconds(30), false, false, Durability.RAM_FIRST, 1));
    return proxy(Tier.class, cache, (method, args) -> {
      if (method.getName().equals("tryWriter")) {
        @SuppressWarnings("unchecked")
        Optional<BlockWriter> writer = (Optional<BlockWriter>) method.invoke(cache, args);
        return writer.map(w -> waiting(w, delay));
      }
      return method.invoke(cache, args);
    });
  }

  private static BlockWriter waiting(BlockWriter writer, Duration delay) {
    return proxy(BlockWriter.class, writer, (method, args) -> {
      switch (method.getName()) {
        case "tryCommit":
          return Optional.empty();
        case "commit":
          Thread.sleep(delay.toMillis());
          return method.invoke(writer, args);
        default:
          return method.invoke(writer, args);
      }
    });
  }

  private interface Call {
    Object invoke(Method method, Object[] args) throws Exception;
  }

  private static <T> T proxy(Class<T> type, T target, Call call) {
    InvocationHandler handler = (proxy, method, args) -> {
      try {
        return call.invoke(method, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    };
    return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type},
        handler));
  }
}
