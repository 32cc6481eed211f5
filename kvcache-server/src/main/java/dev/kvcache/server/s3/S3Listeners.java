package dev.kvcache.server.s3;

import io.micronaut.context.annotation.Requires;
import io.micronaut.context.annotation.Value;
import io.micronaut.context.event.ApplicationEventListener;
import io.micronaut.context.event.BeanCreatedEvent;
import io.micronaut.context.event.BeanCreatedEventListener;
import io.micronaut.http.server.netty.NettyHttpServer;
import io.micronaut.http.server.netty.configuration.NettyHttpServerConfiguration.NettyListenerConfiguration;
import io.micronaut.http.server.netty.configuration.NettyHttpServerConfiguration;
import io.micronaut.runtime.server.event.ServerStartupEvent;
import jakarta.inject.Singleton;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Has the server listen on the S3 API's port beside its own: the same HTTP server (HTTP/1.1 and
 * HTTP/2, graceful stop), two listeners on the same host, both over TLS when the server's is
 * (HTTP/2 by ALPN), or both cleartext (HTTP/2 with prior knowledge or by upgrade); with
 * {@code micronaut.server.dual-protocol}, the server's own port is there both ways. A port of -1
 * is any free port, which Micronaut has the system choose as it binds; the S3 API's is learnt
 * when the server has started ({@link S3Settings#port()}). Where the operator configured
 * Micronaut's listeners, they are left as they are, and the API is not served.
 */
@Singleton
@Requires(property = "kvcache.s3.enabled", notEquals = "false")
class S3Listeners implements BeanCreatedEventListener<NettyHttpServerConfiguration>,
    ApplicationEventListener<ServerStartupEvent> {

  private static final Logger log = LoggerFactory.getLogger(S3Listeners.class);

  private final S3Settings settings;
  private final boolean tls;
  private final int tlsPort;
  private final boolean dual;

  S3Listeners(S3Settings settings,
      @Value("${micronaut.server.ssl.enabled:false}") boolean tls,
      @Value("${micronaut.server.ssl.port:8443}") int tlsPort,
      @Value("${micronaut.server.dual-protocol:false}") boolean dual) {
    this.settings = settings;
    this.tls = tls;
    this.tlsPort = tlsPort;
    this.dual = dual;
  }

  @Override
  public NettyHttpServerConfiguration onCreated(BeanCreatedEvent<NettyHttpServerConfiguration> e) {
    NettyHttpServerConfiguration c = e.getBean();
    if (c.getListeners() != null && !c.getListeners().isEmpty()) {
      log.warn("micronaut.server.netty.listeners are set: the S3 API is not served; add a "
          + "listener on its port to them to serve it");
      return c;
    }
    String host = c.getHost().orElse(null);
    List<NettyListenerConfiguration> listeners = new ArrayList<>();
    if (!tls || dual) {
      listeners.add(NettyListenerConfiguration.createTcp(host,
          c.getPort().orElse(DEFAULT_HTTP_PORT), false, null, null));
    }
    if (tls) {
      listeners.add(NettyListenerConfiguration.createTcp(host, tlsPort, true, null, null));
    }
    int s3 = settings.getPort();
    for (NettyListenerConfiguration l : listeners) {
      if (s3 != -1 && l.getPort() == s3) {
        throw new IllegalStateException("kvcache.s3.port is " + s3 + ", the server's own port "
            + "too: set another, or kvcache.s3.enabled: false");
      }
    }
    ownPorts = listeners.stream().map(NettyListenerConfiguration::getPort).toList();
    if (s3 == -1 && ownPorts.size() > 1 && ownPorts.contains(-1)) {
      throw new IllegalStateException("kvcache.s3.port: -1 (any free port) needs the server's "
          + "own ports set, with micronaut.server.dual-protocol: set it or them");
    }
    listeners.add(NettyListenerConfiguration.createTcp(host, s3, tls, null, null));
    c.setListeners(listeners);
    return c;
  }

  /** Learns the S3 API's port, if it was any free one: the one the server's own do not have. */
  @Override
  public void onApplicationEvent(ServerStartupEvent event) {
    if (settings.getPort() != -1 || !(event.getSource() instanceof NettyHttpServer server)) {
      return;
    }
    Set<Integer> bound = new HashSet<>(server.getBoundPorts());
    bound.remove(server.getPort());
    bound.removeAll(ownPorts);
    if (bound.size() == 1) {
      settings.bound(bound.iterator().next());
    }
  }

  /** The ports of the server's own listeners, as set (-1: any). */
  private volatile List<Integer> ownPorts = List.of();

  /** The server's port when none is set (as application.yml sets it). */
  private static final int DEFAULT_HTTP_PORT = 7070;
}
