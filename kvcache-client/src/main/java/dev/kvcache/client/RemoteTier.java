package dev.kvcache.client;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.CacheStats;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierCounters;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Blocks kept by one or more {@code kvcache-server}s, as a {@link Tier}: on its own, or under RAM
 * and disk in a tiered cache ({@code KvCache.builder().lowerTier(remote)}).
 *
 * <p>Each key lives on one server, chosen by rendezvous hashing over the configured servers (or
 * the addresses of a DNS name), so every client with the same list finds it in the same place. A
 * server that cannot be reached, or does not answer within the request timeout, is left alone for
 * a back-off: meanwhile its keys are misses, puts to it are dropped ({@link PutStatus#NOT_ADMITTED})
 * and deletes do not reach it. A block is read into the caller's buffer as its frames arrive, and
 * only a complete block, of exactly the length the server announced, counts as a hit: a server
 * dying mid-block is a miss, never a short or mixed block. Reads are retried once on a fresh
 * connection; writes are not retried. A refused token or an unknown namespace throws {@link
 * RemoteTierException}: those are configuration errors no retry fixes.
 *
 * <p>{@link #capacityBytes()} and the gauges in {@link #stats()} are 0: the servers report their
 * own on {@code /prometheus}.
 */
public final class RemoteTier implements Tier {

  private static final Logger log = LoggerFactory.getLogger(RemoteTier.class);
  private static final Pattern NAMESPACE = Pattern.compile("[A-Za-z0-9._-]{1,64}");
  private static final Pattern PRESENT = Pattern.compile("\"present\"\\s*:\\s*(\\d+)");
  private static final int UNREACHABLE = -1;
  private static final long BODY_PATIENCE_MILLIS = 1000;

  private final RemoteTierConfig config;
  private final EventLoopGroup group;
  private final TierCounters counters = new TierCounters();
  private final String prefix;
  private volatile Servers servers;
  private volatile boolean closed;

  /** The current servers and their rendezvous ids, in one snapshot. */
  private static final class Servers {
    final List<ServerLink> links;
    final List<Long> ids;
    final long resolvedAtNanos;

    Servers(List<ServerLink> links, long resolvedAtNanos) {
      this.links = links;
      this.ids = links.stream().map(l -> l.id).toList();
      this.resolvedAtNanos = resolvedAtNanos;
    }
  }

  /**
   * Connects lazily: no server is contacted before the first request.
   *
   * @throws IllegalArgumentException if the namespace is not a server namespace name
   * @throws IllegalStateException if the DNS name has no address
   */
  public RemoteTier(RemoteTierConfig config) {
    this.config = Objects.requireNonNull(config, "config");
    if (!NAMESPACE.matcher(config.namespace).matches()) {
      throw new IllegalArgumentException("namespace '" + config.namespace
          + "' is not a server namespace name (1 to 64 of A-Z a-z 0-9 . _ -)");
    }
    this.prefix = "/v1/namespaces/" + config.namespace;
    this.group = new MultiThreadIoEventLoopGroup(config.ioThreads,
        new DefaultThreadFactory("kvcache-client", true), NioIoHandler.newFactory());
    try {
      this.servers = new Servers(links(addresses(), Map.of()), System.nanoTime());
    } catch (RuntimeException e) {
      group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
      throw e;
    }
  }

  private List<InetSocketAddress> addresses() {
    if (config.dnsName == null) {
      return config.servers;
    }
    try {
      List<InetSocketAddress> found = new ArrayList<>();
      for (InetAddress a : InetAddress.getAllByName(config.dnsName)) {
        found.add(new InetSocketAddress(a, config.dnsPort));
      }
      return found;
    } catch (UnknownHostException e) {
      throw new IllegalStateException("DNS name '" + config.dnsName + "' has no address", e);
    }
  }

  private List<ServerLink> links(List<InetSocketAddress> addresses, Map<String, ServerLink> old) {
    List<ServerLink> links = new ArrayList<>();
    for (InetSocketAddress a : addresses) {
      String name = a.getHostString() + ":" + a.getPort();
      ServerLink existing = old.get(name);
      links.add(existing != null ? existing : new ServerLink(a, config, group));
    }
    return List.copyOf(links);
  }

  /** The servers, looking the DNS name up again once its refresh interval has passed. */
  private Servers servers() {
    Servers s = servers;
    if (config.dnsName == null
        || System.nanoTime() - s.resolvedAtNanos < config.dnsRefresh.toNanos()) {
      return s;
    }
    synchronized (this) {
      s = servers;
      if (System.nanoTime() - s.resolvedAtNanos < config.dnsRefresh.toNanos()) {
        return s;
      }
      Map<String, ServerLink> old = new LinkedHashMap<>();
      s.links.forEach(l -> old.put(l.name, l));
      Servers fresh;
      try {
        fresh = new Servers(links(addresses(), old), System.nanoTime());
      } catch (IllegalStateException e) {
        log.warn("{}; keeping the {} servers found before", e.getMessage(), s.links.size());
        fresh = new Servers(s.links, System.nanoTime());
      }
      for (ServerLink l : s.links) {
        if (!fresh.links.contains(l)) {
          l.close();
        }
      }
      servers = fresh;
      return fresh;
    }
  }

  private ServerLink linkFor(BlockKey key) {
    Servers s = servers();
    return s.links.get(Rendezvous.pick(key, s.ids));
  }

  private String blockPath(BlockKey key) {
    return prefix + "/blocks/" + key.toHex();
  }

  @Override
  public String name() {
    return "remote";
  }

  @Override
  public long capacityBytes() {
    return 0;
  }

  @Override
  public int maxBlockBytes() {
    return config.maxBlockBytes;
  }

  @Override
  public PutStatus put(BlockKey key, ByteBuffer src) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(src, "src");
    ensureOpen();
    if (!src.hasRemaining()) {
      throw new IllegalArgumentException("cannot store an empty block under key " + key);
    }
    if (src.remaining() > config.maxBlockBytes) {
      counters.rejection();
      return PutStatus.REJECTED_TOO_LARGE;
    }
    ResponseSink.Text answer = new ResponseSink.Text();
    int status = call(linkFor(key), "PUT", blockPath(key), Unpooled.wrappedBuffer(src.duplicate()),
        () -> answer, false);
    switch (status) {
      case 201:
        counters.put();
        return PutStatus.STORED;
      case 202:
      case UNREACHABLE:
        counters.put();
        return PutStatus.NOT_ADMITTED;
      case 413:
        counters.rejection();
        return PutStatus.REJECTED_TOO_LARGE;
      case 507:
        counters.rejection();
        return PutStatus.REJECTED_NO_SPACE;
      default:
        throw unexpected("PUT", key, status, answer.toString());
    }
  }

  @Override
  public BlockLease get(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    BlockSink[] sink = new BlockSink[1];
    int status = call(linkFor(key), "GET", blockPath(key), null,
        () -> sink[0] = new BlockSink(null, config.maxBlockBytes), true);
    if (status == 200 && sink[0].complete()) {
      counters.hit();
      return new RemoteLease(key, sink[0].block(), counters);
    }
    missOrThrow("GET", key, status, sink[0]);
    return BlockLease.miss(key);
  }

  @Override
  public GetStatus getInto(BlockKey key, ByteBuffer dst) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(dst, "dst");
    ensureOpen();
    if (dst.isReadOnly()) {
      throw new ReadOnlyBufferException();
    }
    BlockSink[] sink = new BlockSink[1];
    int status = call(linkFor(key), "GET", blockPath(key), null,
        () -> sink[0] = new BlockSink(dst, config.maxBlockBytes), true);
    if (status == 200 && sink[0].tooSmall()) {
      return GetStatus.BUFFER_TOO_SMALL;
    }
    if (status == 200 && sink[0].complete()) {
      counters.hit();
      return GetStatus.HIT;
    }
    missOrThrow("GET", key, status, sink[0]);
    return GetStatus.MISS;
  }

  private void missOrThrow(String method, BlockKey key, int status, BlockSink sink) {
    counters.miss();
    if (status == 401 || status == 403 || (status == 404 && !isNotCached(sink.errorText()))) {
      throw unexpected(method, key, status, sink.errorText());
    }
  }

  /** Whether a 404's body says the block is not cached (not that the namespace is unknown). */
  private static boolean isNotCached(String errorBody) {
    return errorBody.contains("\"not-cached\"");
  }

  @Override
  public boolean contains(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    ResponseSink.Text answer = new ResponseSink.Text();
    int status = call(linkFor(key), "HEAD", blockPath(key), null, () -> answer, true);
    if (status == 200) {
      return true;
    }
    if (status == 401 || status == 403) {
      throw unexpected("HEAD", key, status, answer.toString());
    }
    return false;
  }

  @Override
  public boolean delete(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    ResponseSink.Text answer = new ResponseSink.Text();
    int status = call(linkFor(key), "DELETE", blockPath(key), null, () -> answer, false);
    if (status == 204) {
      counters.delete();
      return true;
    }
    if (status == 404 && isNotCached(answer.toString())) {
      return false;
    }
    if (status == UNREACHABLE || status >= 500) {
      log.warn("DELETE of {} did not reach {}", key, linkFor(key).name);
      return false;
    }
    throw unexpected("DELETE", key, status, answer.toString());
  }

  /**
   * Asks each server about its own keys, all at once: the prefix ends at the first key its server
   * lacks (or its server is down).
   */
  @Override
  public int lookupPrefix(List<BlockKey> keys) {
    Objects.requireNonNull(keys, "keys");
    ensureOpen();
    if (keys.isEmpty()) {
      return 0;
    }
    Servers s = servers();
    Map<ServerLink, List<Integer>> byServer = new LinkedHashMap<>();
    for (int i = 0; i < keys.size(); i++) {
      byServer.computeIfAbsent(s.links.get(Rendezvous.pick(keys.get(i), s.ids)),
          l -> new ArrayList<>()).add(i);
    }
    int present = keys.size();
    for (Map.Entry<ServerLink, List<Integer>> e : byServer.entrySet()) {
      List<Integer> indexes = e.getValue();
      if (indexes.get(0) >= present) {
        continue; // this server's first key is already past the end
      }
      StringBuilder json = new StringBuilder(12 + 35 * indexes.size()).append("{\"keys\":[");
      for (int j = 0; j < indexes.size(); j++) {
        json.append(j == 0 ? "\"" : ",\"").append(keys.get(indexes.get(j)).toHex()).append('"');
      }
      json.append("]}");
      ResponseSink.Text answer = new ResponseSink.Text();
      int status = call(e.getKey(), "POST", prefix + "/lookup",
          Unpooled.wrappedBuffer(json.toString().getBytes(StandardCharsets.US_ASCII)),
          () -> answer, true);
      int found = 0;
      if (status == 200) {
        Matcher m = PRESENT.matcher(answer.toString());
        found = m.find() ? Math.min(Integer.parseInt(m.group(1)), indexes.size()) : 0;
      } else if (status == 401 || status == 403 || status == 404) {
        throw unexpected("POST lookup", keys.get(indexes.get(0)), status, answer.toString());
      }
      if (found < indexes.size()) {
        present = Math.min(present, indexes.get(found));
      }
    }
    return present;
  }

  /**
   * One request to one server, waited for.
   *
   * @param body the request body (released here), or null
   * @param retryOnce whether a failed exchange is tried once more (reads only)
   * @return the status, or {@link #UNREACHABLE}
   */
  private int call(ServerLink link, String method, String path, ByteBuf body,
      Supplier<ResponseSink> sinks, boolean retryOnce) {
    try {
      for (int attempt = 0; ; attempt++) {
        StreamExchange exchange = link.start(method, path,
            "POST".equals(method) ? "application/json" : "application/octet-stream",
            body == null ? null : body.retainedDuplicate(), sinks.get());
        if (exchange == null) {
          return UNREACHABLE;
        }
        try {
          return exchange.done.get(config.requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
          if (exchange.abandon()) {
            return exchange.done.join();
          }
          link.failed(new TimeoutException("no answer to " + method + " in "
              + config.requestTimeout.toMillis() + " ms"));
          return UNREACHABLE;
        } catch (ExecutionException e) {
          exchange.abandon();
          Throwable cause = e.getCause();
          if (retryOnce && attempt == 0) {
            log.debug("{} {} on {} failed ({}); trying once more", method, path, link.name,
                cause.toString());
            continue;
          }
          if (cause instanceof IOException) {
            link.failed(cause);
          } else {
            log.warn("{} {} on {} failed: {}", method, path, link.name, cause.toString());
          }
          return UNREACHABLE;
        } catch (InterruptedException e) {
          exchange.abandon();
          Thread.currentThread().interrupt();
          return UNREACHABLE;
        } finally {
          exchange.awaitBodyReleased(BODY_PATIENCE_MILLIS);
        }
      }
    } finally {
      if (body != null) {
        body.release();
      }
    }
  }

  private RemoteTierException unexpected(String method, BlockKey key, int status, String body) {
    return new RemoteTierException(status, method + " of block " + key + " in namespace '"
        + config.namespace + "' answered " + status + (body.isEmpty() ? "" : ": " + body));
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("the remote tier is closed");
    }
  }

  @Override
  public CacheStats stats() {
    return counters.snapshot(0, 0, 0, 0, 0);
  }

  /** Closes the connections and stops the IO threads. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    servers.links.forEach(ServerLink::close);
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
  }

  @Override
  public String toString() {
    return "RemoteTier[" + config + "]";
  }
}
