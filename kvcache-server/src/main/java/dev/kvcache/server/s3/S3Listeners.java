package dev.kvcache.server.s3;

import io.micronaut.context.annotation.Requires;
import io.micronaut.context.annotation.Value;
import io.micronaut.context.event.BeanCreatedEvent;
import io.micronaut.context.event.BeanCreatedEventListener;
import io.micronaut.http.server.netty.configuration.NettyHttpServerConfiguration;
import io.micronaut.http.server.netty.configuration.NettyHttpServerConfiguration.NettyListenerConfiguration;
import jakarta.inject.Singleton;
import java.util.List;

/**
 * Has the server listen on the S3 API's port beside its own: the same HTTP server (HTTP/1.1 and
 * cleartext HTTP/2, graceful stop), two listeners on the same host. Where the operator configured
 * Micronaut's listeners, they are left as they are.
 */
@Singleton
@Requires(property = "kvcache.s3.port")
class S3Listeners implements BeanCreatedEventListener<NettyHttpServerConfiguration> {

  private final S3Settings settings;
  private final boolean tls;

  S3Listeners(S3Settings settings, @Value("${micronaut.server.ssl.enabled:false}") boolean tls) {
    this.settings = settings;
    this.tls = tls;
  }

  @Override
  public NettyHttpServerConfiguration onCreated(BeanCreatedEvent<NettyHttpServerConfiguration> e) {
    NettyHttpServerConfiguration c = e.getBean();
    if (c.getListeners() != null && !c.getListeners().isEmpty()) {
      return c;
    }
    if (tls) {
      throw new IllegalStateException("kvcache.s3.port is not served over TLS yet: unset it, or "
          + "micronaut.server.ssl.enabled");
    }
    String host = c.getHost().orElse(null);
    int port = c.getPort().orElse(7070);
    if (port < 1) {
      throw new IllegalStateException("kvcache.s3.port needs micronaut.server.port to be a "
          + "port, not " + port);
    }
    if (port == settings.getPort()) {
      throw new IllegalStateException("kvcache.s3.port and micronaut.server.port are both " + port);
    }
    NettyListenerConfiguration main = NettyListenerConfiguration.createTcp(host, port, false,
        null, null);
    NettyListenerConfiguration s3 = NettyListenerConfiguration.createTcp(host, settings.getPort(),
        false, null, null);
    c.setListeners(List.of(main, s3));
    return c;
  }
}
