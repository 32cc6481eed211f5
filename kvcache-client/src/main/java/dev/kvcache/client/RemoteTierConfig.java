package dev.kvcache.client;

import dev.kvcache.codec.BlockCodec;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Where a {@link RemoteTier} finds its servers and how it talks to them. Build with {@link
 * #builder()}: either a list of servers, or one DNS name whose addresses are the servers (a
 * Kubernetes headless service), looked up again every {@link Builder#dnsRefresh}.
 */
public final class RemoteTierConfig {

  final List<InetSocketAddress> servers;
  final String dnsName;
  final int dnsPort;
  final Duration dnsRefresh;
  final String namespace;
  final String token;
  final Duration connectTimeout;
  final Duration requestTimeout;
  final Duration downBackoff;
  final Duration maxDownBackoff;
  final int connectionsPerServer;
  final int maxBlockBytes;
  final int ioThreads;
  final BlockCodec wireCodec;
  final boolean tls;
  final Path trustedCertificates;
  final boolean checksums;

  private RemoteTierConfig(Builder b) {
    this.servers = List.copyOf(b.servers);
    this.dnsName = b.dnsName;
    this.dnsPort = b.dnsPort;
    this.dnsRefresh = b.dnsRefresh;
    this.namespace = b.namespace;
    this.token = b.token;
    this.connectTimeout = b.connectTimeout;
    this.requestTimeout = b.requestTimeout;
    this.downBackoff = b.downBackoff;
    this.maxDownBackoff = b.maxDownBackoff;
    this.connectionsPerServer = b.connectionsPerServer;
    this.maxBlockBytes = b.maxBlockBytes;
    this.ioThreads = b.ioThreads;
    this.wireCodec = b.wireCodec;
    this.tls = b.tls;
    this.trustedCertificates = b.trustedCertificates;
    this.checksums = b.checksums;
  }

  /** A builder with the defaults: namespace {@code default}, no token, 1 connection per server. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public String toString() {
    return "RemoteTierConfig[" + (dnsName != null ? dnsName + ":" + dnsPort : servers)
        + ", namespace " + namespace + (token != null ? ", with token" : "")
        + (tls ? ", TLS" : "") + "]";
  }

  /** Builds a {@link RemoteTierConfig}. */
  public static final class Builder {

    private final List<InetSocketAddress> servers = new ArrayList<>();
    private String dnsName;
    private int dnsPort;
    private Duration dnsRefresh = Duration.ofSeconds(30);
    private String namespace = "default";
    private String token;
    private Duration connectTimeout = Duration.ofSeconds(1);
    private Duration requestTimeout = Duration.ofSeconds(30);
    private Duration downBackoff = Duration.ofMillis(500);
    private Duration maxDownBackoff = Duration.ofSeconds(30);
    private int connectionsPerServer = 2;
    private int maxBlockBytes = 64 << 20;
    private int ioThreads = 2;
    private BlockCodec wireCodec;
    private boolean tls;
    private Path trustedCertificates;
    private boolean cleartextToken;
    private boolean checksums = true;

    private Builder() {}

    /** Adds a server (HTTP/2 cleartext with prior knowledge, or over TLS with {@link #tls}). */
    public Builder server(String host, int port) {
      servers.add(InetSocketAddress.createUnresolved(Objects.requireNonNull(host, "host"),
          checkPort(port)));
      return this;
    }

    /**
     * Takes the servers from the addresses of {@code name}, all on {@code port}, instead of a list.
     */
    public Builder dns(String name, int port) {
      this.dnsName = Objects.requireNonNull(name, "name");
      this.dnsPort = checkPort(port);
      return this;
    }

    /** How often the DNS name is looked up again (default 30 s). */
    public Builder dnsRefresh(Duration refresh) {
      this.dnsRefresh = positive(refresh, "dnsRefresh");
      return this;
    }

    /** The server namespace blocks are stored in (default {@code default}). */
    public Builder namespace(String namespace) {
      this.namespace = Objects.requireNonNull(namespace, "namespace");
      return this;
    }

    /**
     * The bearer token sent with every request, or null for none. Over cleartext it is sent only
     * to loopback servers, unless {@link #allowCleartextToken} says otherwise.
     */
    public Builder token(String token) {
      this.token = token;
      return this;
    }

    /**
     * Speaks TLS to every server (default: cleartext), HTTP/2 chosen by ALPN. Each server's
     * certificate must chain to a trusted CA (the JVM's, or those of {@link #trustedCertificates})
     * and name the server as given ({@link #server}'s host, or the {@link #dns} name); a server that
     * fails the check counts as down.
     */
    public Builder tls(boolean tls) {
      this.tls = tls;
      return this;
    }

    /**
     * Trusts the CA certificates of this PEM file instead of the JVM's (for a private CA, or a
     * server's own self-signed certificate); implies {@link #tls}.
     */
    public Builder trustedCertificates(Path pemFile) {
      this.trustedCertificates = Objects.requireNonNull(pemFile, "pemFile");
      this.tls = true;
      return this;
    }

    /**
     * Whether blocks travel with their CRC32C (default true): a put sends its block's ({@code
     * x-amz-checksum-crc32c}), which the server checks before it stores the block, and a get checks
     * the bytes it received against the one the server sends, computed as they are copied into
     * place; a block that arrives damaged is a miss. Encoded blocks ({@link #wireCodec}) and
     * writers' blocks rely on the codec's own checksums and on the server's check of what it stored.
     */
    public Builder checksums(boolean checksums) {
      this.checksums = checksums;
      return this;
    }

    /**
     * Lets the token travel in cleartext to servers that are not on this host (default: refused,
     * since anyone on the path can read it); for networks that are private by other means.
     */
    public Builder allowCleartextToken(boolean allow) {
      this.cleartextToken = allow;
      return this;
    }

    /** How long connecting to a server may take before it counts as down (default 1 s). */
    public Builder connectTimeout(Duration timeout) {
      this.connectTimeout = positive(timeout, "connectTimeout");
      return this;
    }

    /** How long one request may take, body included (default 30 s). */
    public Builder requestTimeout(Duration timeout) {
      this.requestTimeout = positive(timeout, "requestTimeout");
      return this;
    }

    /**
     * How long a server that failed is left alone before it is tried again: {@code initial},
     * doubling on each further failure up to {@code max} (defaults 500 ms and 30 s).
     */
    public Builder downBackoff(Duration initial, Duration max) {
      this.downBackoff = positive(initial, "downBackoff");
      this.maxDownBackoff = positive(max, "maxDownBackoff");
      return this;
    }

    /**
     * HTTP/2 connections per server (default 2, one per IO thread by default). Each calling thread
     * keeps to one of them; one thread's requests therefore always take one connection. A
     * connection's IO thread copies every byte it receives, so blocks of several MiB from several
     * threads move faster over two connections: on a loopback test with two cores, four threads'
     * 2 MiB GETs moved 2.5 times as many blocks over two connections as over one, while their 256
     * KiB GETs moved about 12% fewer (docs/benchmarks/history.md).
     */
    public Builder connectionsPerServer(int connections) {
      if (connections < 1) {
        throw new IllegalArgumentException("connectionsPerServer must be at least 1");
      }
      this.connectionsPerServer = connections;
      return this;
    }

    /** The largest block this tier takes (default 64 MiB); the servers' own limit also applies. */
    public Builder maxBlockBytes(int bytes) {
      if (bytes < 1) {
        throw new IllegalArgumentException("maxBlockBytes must be positive");
      }
      this.maxBlockBytes = bytes;
      return this;
    }

    /** Threads doing the network IO (default 2). */
    public Builder ioThreads(int threads) {
      if (threads < 1) {
        throw new IllegalArgumentException("ioThreads must be at least 1");
      }
      this.ioThreads = threads;
      return this;
    }

    /**
     * Blocks travel as containers of {@code codec} ({@code Content-Encoding: kvcache-lz4}), or as
     * they are if null (the default). A put is encoded before it is sent (into a buffer of its
     * encoded size); a get asks for the encoded block, which a server answers when its {@code
     * kvcache.wire-codec} is {@code lz4}, and decodes it into the destination once it has arrived.
     * Batch reads ({@link RemoteTier#getAllInto}) stay unencoded. Pays off only on links slower
     * than the codec, and on data it shrinks (docs/benchmarks/codec.md).
     */
    public Builder wireCodec(BlockCodec codec) {
      this.wireCodec = codec;
      return this;
    }

    /**
     * The configuration.
     *
     * @throws IllegalStateException if neither servers nor a DNS name were given, or both were;
     *     if the trusted certificates file cannot be read; or if a token would be sent in cleartext
     *     to a server beyond this host without {@link #allowCleartextToken}
     */
    public RemoteTierConfig build() {
      if (servers.isEmpty() == (dnsName == null)) {
        throw new IllegalStateException("give either servers or a DNS name, not "
            + (servers.isEmpty() ? "neither" : "both"));
      }
      if (trustedCertificates != null && !Files.isReadable(trustedCertificates)) {
        throw new IllegalStateException("cannot read the trusted certificates file "
            + trustedCertificates);
      }
      if (token != null && !tls && !cleartextToken) {
        List<String> hosts = dnsName != null ? List.of(dnsName)
            : servers.stream().map(InetSocketAddress::getHostString).toList();
        for (String host : hosts) {
          if (!onThisHost(host)) {
            throw new IllegalStateException("the token would travel in cleartext to " + host
                + ", which is not a loopback address: use TLS (tls(true)), or allowCleartextToken(true)"
                + " on a network that is private by other means");
          }
        }
      }
      return new RemoteTierConfig(this);
    }

    /** Whether every address of {@code host} is a loopback address (false if it has none). */
    private static boolean onThisHost(String host) {
      try {
        for (InetAddress a : InetAddress.getAllByName(host)) {
          if (!a.isLoopbackAddress()) {
            return false;
          }
        }
        return true;
      } catch (UnknownHostException e) {
        return false;
      }
    }

    private static int checkPort(int port) {
      if (port < 1 || port > 65535) {
        throw new IllegalArgumentException("port " + port + " is not between 1 and 65535");
      }
      return port;
    }

    private static Duration positive(Duration d, String name) {
      Objects.requireNonNull(d, name);
      if (d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException(name + " must be positive, got " + d);
      }
      return d;
    }
  }
}
