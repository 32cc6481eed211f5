package dev.kvcache.jlama;

import dev.kvcache.KvCache;
import dev.kvcache.client.RemoteTier;
import dev.kvcache.client.RemoteTierConfig;
import dev.kvcache.tiered.KvCacheBuilder;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A cache from settings: system properties, else environment variables (the chat server's
 * command line gives them as options too). LangChain4j's Jlama chat model uses it when it is given
 * no cache.
 *
 * <table>
 *   <caption>settings</caption>
 *   <tr><th>property</th><th>variable</th><th>default</th><th>what</th></tr>
 *   <tr><td>{@code kvcache.server}</td><td>{@code KVCACHE_SERVER}</td><td>none</td>
 *       <td>{@code host:port} of kvcache-server (several, comma-separated, shard the blocks):
 *       a remote tier over it; without one, an embedded RAM cache</td></tr>
 *   <tr><td>{@code kvcache.namespace}</td><td>{@code KVCACHE_NAMESPACE}</td>
 *       <td>{@code default}</td><td>the server's namespace</td></tr>
 *   <tr><td>{@code kvcache.token}</td><td>{@code KVCACHE_TOKEN}</td><td>none</td>
 *       <td>the server's bearer token</td></tr>
 *   <tr><td>{@code kvcache.ram-bytes}</td><td>{@code KVCACHE_RAM_BYTES}</td><td>{@code 1GiB}</td>
 *       <td>the embedded cache's RAM ({@code KiB}, {@code MiB}, {@code GiB} suffixes)</td></tr>
 *   <tr><td>{@code kvcache.block-tokens}</td><td>{@code KVCACHE_BLOCK_TOKENS}</td>
 *       <td>{@code 32}</td><td>tokens per block</td></tr>
 * </table>
 *
 * <p>The cache is made once per JVM, at the first model built, and shared by every model.
 */
public final class CacheSettings {

  private static final Logger log = LoggerFactory.getLogger(CacheSettings.class);

  private static KvCache shared;

  private CacheSettings() {}

  /** The setting {@code name}: its system property, else its environment variable, else null. */
  public static String setting(String name) {
    return setting(name, System.getProperties()::getProperty, System.getenv()::get);
  }

  static String setting(String name, Function<String, String> properties,
      Function<String, String> environment) {
    String v = properties.apply(name);
    return v != null ? v : environment.apply(name.toUpperCase(Locale.ROOT).replace('.', '_')
        .replace('-', '_'));
  }

  /** The tokens per block the settings give ({@code kvcache.block-tokens}). */
  public static int blockTokens() {
    return blockTokens(CacheSettings::setting);
  }

  /** The tokens per block {@code settings} give ({@code kvcache.block-tokens}). */
  public static int blockTokens(Function<String, String> settings) {
    String v = settings.apply("kvcache.block-tokens");
    try {
      int n = v == null ? 32 : Integer.parseInt(v.strip());
      if (n >= 1) {
        return n;
      }
    } catch (NumberFormatException e) {
      // refused below
    }
    throw new IllegalArgumentException("kvcache.block-tokens is a count of tokens, not " + v);
  }

  /** The cache the settings describe, made at the first call, closed when the JVM exits. */
  public static synchronized KvCache shared() {
    if (shared == null) {
      shared = open(CacheSettings::setting);
      Runtime.getRuntime().addShutdownHook(new Thread(shared::close, "kvcache-close"));
    }
    return shared;
  }

  /**
   * The cache of {@code settings} (a setting's value by its property name, or null): a remote tier
   * over the servers named, or an embedded RAM cache. The caller closes it.
   */
  public static KvCache open(Function<String, String> settings) {
    String servers = settings.apply("kvcache.server");
    if (servers == null || servers.isBlank()) {
      long ram = bytes(settings.apply("kvcache.ram-bytes"), 1L << 30);
      log.info("kvcache: an embedded cache of {} MiB of RAM for the chat model's prefixes",
          ram >> 20);
      return KvCacheBuilder.newBuilder().ramBytes(ram).build();
    }
    RemoteTierConfig.Builder b = RemoteTierConfig.builder();
    for (String server : servers.split(",")) {
      String s = server.strip();
      int colon = s.lastIndexOf(':');
      if (colon <= 0) {
        throw new IllegalArgumentException("kvcache.server is host:port, not " + s);
      }
      b.server(s.substring(0, colon), Integer.parseInt(s.substring(colon + 1)));
    }
    String namespace = settings.apply("kvcache.namespace");
    if (namespace != null) {
      b.namespace(namespace);
    }
    String token = settings.apply("kvcache.token");
    if (token != null) {
      b.token(token);
    }
    log.info("kvcache: the chat model's prefixes on {}", servers);
    return new RemoteTier(b.build());
  }

  /** {@code text} as a count of bytes, with a KiB, MiB or GiB suffix or none. */
  static long bytes(String text, long otherwise) {
    if (text == null || text.isBlank()) {
      return otherwise;
    }
    String t = text.strip();
    for (Map.Entry<String, Integer> unit : Map.of("KiB", 10, "MiB", 20, "GiB", 30).entrySet()) {
      if (t.endsWith(unit.getKey())) {
        return Long.parseLong(t.substring(0, t.length() - 3).strip()) << unit.getValue();
      }
    }
    return Long.parseLong(t);
  }
}
