package dev.kvcache.server;

import dev.kvcache.ram.RamTier;
import dev.kvcache.server.s3.S3Settings;
import dev.kvcache.wire.Wire;
import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.Micronaut;
import io.micronaut.runtime.server.EmbeddedServer;
import java.io.PrintStream;

/**
 * Starts the server: {@code java -jar kvcache-server.jar}. Settings come from the embedded
 * {@code application.yml}, a file named by {@code -Dmicronaut.config.files=...}, system properties
 * and the environment ({@code KVCACHE_CACHE_RAM_BYTES=4GiB} sets {@code kvcache.cache.ram-bytes}).
 */
public final class KvCacheServer {

  private KvCacheServer() {}

  /**
   * Starts the server and prints where it listens.
   *
   * @param args Micronaut's command-line properties, such as {@code -micronaut.server.port=7070}
   */
  public static void main(String[] args) {
    ApplicationContext context;
    // the RAM tier's memory is zeroed once the server listens, not while its start needs the
    // JVM's safepoints (RamTier.holdReservations): a start takes seconds whatever its size
    RamTier.holdReservations();
    try {
      context = Micronaut.build(args).mainClass(KvCacheServer.class).banner(false).start();
    } catch (RuntimeException e) {
      System.err.println("kvcache-server did not start: " + rootMessage(e));
      System.exit(1);
      return;
    } finally {
      RamTier.releaseReservations();
    }
    printWelcome(context.getBean(EmbeddedServer.class), System.out);
  }

  static void printWelcome(EmbeddedServer server, PrintStream out) {
    S3Settings s3 = server.getApplicationContext().getBean(S3Settings.class);
    // with the S3 API the server has two listeners, and its URL may be either's
    String host = server.getScheme() + "://" + server.getHost() + ":";
    // the server's own listeners come before the S3 API's: its port is the first one's
    String base = s3.port() == 0 ? server.getURL().toString() : host + server.getPort();
    String block = base + Wire.NAMESPACES + "default/blocks/000102030405060708090a0b0c0d0e0f";
    out.println("kvcache-server listening on " + base + " (HTTP/1.1 and HTTP/2"
        + (server.getScheme().equals("https") ? ")" : " cleartext)"));
    out.println("  try: curl -X PUT -H 'Content-Type: application/octet-stream'"
        + " --data-binary @README.md " + block);
    out.println("       curl --http2-prior-knowledge " + block);
    out.println("  metrics: " + base + "/prometheus   health: " + base + "/health");
    if (s3.port() != 0) {
      out.println("  S3 API: " + host + s3.port()
          + " (buckets: the namespaces; path-style, /<namespace>/<key>)");
    }
  }

  private static String rootMessage(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null && t.getCause() != t) {
      t = t.getCause();
    }
    return t.getMessage() == null ? t.toString() : t.getMessage();
  }
}
