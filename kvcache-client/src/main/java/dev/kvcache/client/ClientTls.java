package dev.kvcache.client;

import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import javax.net.ssl.SSLException;

/** The TLS side of the servers' connections: HTTP/2 by ALPN, certificates and names checked. */
final class ClientTls {

  private ClientTls() {}

  /** The context every server's connections share, or null for cleartext. */
  static SslContext context(RemoteTierConfig config) {
    if (!config.tls) {
      return null;
    }
    SslContextBuilder b = SslContextBuilder.forClient()
        .sslProvider(SslProvider.JDK)
        .endpointIdentificationAlgorithm("HTTPS")
        .applicationProtocolConfig(new ApplicationProtocolConfig(
            ApplicationProtocolConfig.Protocol.ALPN,
            ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
            ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT,
            ApplicationProtocolNames.HTTP_2));
    if (config.trustedCertificates != null) {
      b.trustManager(config.trustedCertificates.toFile());
    }
    try {
      return b.build();
    } catch (SSLException | IllegalArgumentException e) {
      throw new IllegalStateException("cannot use the trusted certificates of "
          + config.trustedCertificates + ": " + e.getMessage(), e);
    }
  }
}
