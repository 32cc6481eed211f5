package dev.kvcache.client;

import io.micrometer.core.instrument.MeterRegistry;
import io.micronaut.context.ApplicationContext;
import io.micronaut.runtime.server.EmbeddedServer;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/** A kvcache-server on a loopback port, with a small RAM tier over a disk tier in a directory. */
final class LocalServer implements AutoCloseable {

  final int port;
  private final ApplicationContext context;

  private LocalServer(int port, Map<String, Object> properties) {
    this.port = port;
    this.context = ApplicationContext.run(properties);
    context.getBean(EmbeddedServer.class).start();
  }

  /** Starts a server on {@code port} (0 for any free one). */
  static LocalServer start(Path dir, int port, int maxBlockBytes, Map<String, Object> extra) {
    int p = port == 0 ? freePort() : port;
    Map<String, Object> props = new HashMap<>();
    props.put("micronaut.server.port", p);
    props.put("kvcache.cache.ram-bytes", "48MiB");
    props.put("kvcache.cache.max-block-bytes", maxBlockBytes + "B");
    props.put("kvcache.cache.disk-dir", dir == null ? "" : dir.toString());
    props.put("kvcache.cache.disk-capacity", "256MiB");
    props.put("kvcache.namespaces", "default,other");
    props.putAll(extra);
    return new LocalServer(p, props);
  }

  static LocalServer start(Path dir) {
    return start(dir, 0, 8 << 20, Map.of());
  }

  private static int freePort() {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The server's count of blocks it answered ({@code sent}) or stored ({@code received}) encoded. */
  double wireContainers(String direction) {
    return context.getBean(MeterRegistry.class).get("kvcache.wire.containers")
        .tag("direction", direction).functionCounter().count();
  }

  /** Bytes the server's cache holds, blocks under way included. */
  long bytesUsed() {
    return context.getBean(dev.kvcache.KvCache.class).stats().bytesUsed();
  }

  /** Blocks the server's cache holds for readers, pinned lookups' included. */
  double leasesOpen() {
    return context.getBean(MeterRegistry.class).get("kvcache.leases.open").gauge().value();
  }

  @Override
  public void close() {
    context.close();
  }
}
