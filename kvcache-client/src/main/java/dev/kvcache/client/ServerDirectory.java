package dev.kvcache.client;

import dev.kvcache.BlockKey;
import dev.kvcache.spi.Rendezvous;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.ssl.SslContext;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The servers of a tier, and which one holds each key: the configured addresses, or those of a
 * DNS name looked up again once its refresh interval has passed (a server that left is
 * disconnected, one that stayed keeps its connections), and rendezvous hashing over their ids, so
 * that every client with the same list finds a key in the same place.
 */
final class ServerDirectory {

  private static final Logger log = LoggerFactory.getLogger(ServerDirectory.class);

  /** The current servers and their rendezvous ids, in one snapshot. */
  private record Servers(List<ServerLink> links, List<Long> ids, long resolvedAtNanos) {
    Servers(List<ServerLink> links, long resolvedAtNanos) {
      this(links, links.stream().map(l -> l.id).toList(), resolvedAtNanos);
    }
  }

  private final RemoteTierConfig config;
  private final EventLoopGroup group;
  private final SslContext ssl;
  private volatile Servers servers;

  /**
   * @param ssl the servers' TLS context, or null for cleartext
   * @throws IllegalStateException if the DNS name has no address
   */
  ServerDirectory(RemoteTierConfig config, EventLoopGroup group, SslContext ssl) {
    this.config = config;
    this.group = group;
    this.ssl = ssl;
    this.servers = new Servers(links(addresses(), Map.of()), System.nanoTime());
  }

  /** The server that holds {@code key}. */
  ServerLink linkFor(BlockKey key) {
    Servers s = servers();
    return s.links().get(Rendezvous.pick(key, s.ids()));
  }

  /** The given keys' indexes, grouped by the server each key lives on, in order. */
  Map<ServerLink, List<Integer>> byServer(List<BlockKey> keys, List<Integer> indexes) {
    Servers s = servers();
    Map<ServerLink, List<Integer>> byServer = new LinkedHashMap<>();
    for (int i : indexes) {
      byServer.computeIfAbsent(s.links().get(Rendezvous.pick(keys.get(i), s.ids())),
          l -> new ArrayList<>()).add(i);
    }
    return byServer;
  }

  /** Closes every server's connections. */
  void close() {
    servers.links().forEach(ServerLink::close);
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
      links.add(existing != null ? existing
          : new ServerLink(a, config, group, ssl,
              config.dnsName != null ? config.dnsName : a.getHostString()));
    }
    return List.copyOf(links);
  }

  /** The servers, looking the DNS name up again once its refresh interval has passed. */
  private Servers servers() {
    Servers s = servers;
    if (config.dnsName == null
        || System.nanoTime() - s.resolvedAtNanos() < config.dnsRefresh.toNanos()) {
      return s;
    }
    synchronized (this) {
      s = servers;
      if (System.nanoTime() - s.resolvedAtNanos() < config.dnsRefresh.toNanos()) {
        return s;
      }
      Map<String, ServerLink> old = new LinkedHashMap<>();
      s.links().forEach(l -> old.put(l.name, l));
      Servers fresh;
      try {
        fresh = new Servers(links(addresses(), old), System.nanoTime());
      } catch (IllegalStateException e) {
        log.warn("{}; keeping the {} servers found before", e.getMessage(), s.links().size());
        fresh = new Servers(s.links(), System.nanoTime());
      }
      for (ServerLink l : s.links()) {
        if (!fresh.links().contains(l)) {
          l.close();
        }
      }
      servers = fresh;
      return fresh;
    }
  }
}
