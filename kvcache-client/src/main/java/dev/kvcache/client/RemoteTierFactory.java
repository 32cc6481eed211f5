package dev.kvcache.client;

import dev.kvcache.codec.BlockCodec;
import dev.kvcache.codec.Filter;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierFactory;
import dev.kvcache.spi.TierSettings;
import java.nio.file.Path;
import java.time.Duration;

/**
 * Opens a {@link RemoteTier} from the {@code remote.*} settings of a {@code KvCacheConfig} with
 * {@code lower = remote}: {@code servers} ({@code host:port} list, comma-separated; {@code
 * https://host:port} for TLS) or {@code dns} ({@code name:port}), {@code namespace}, {@code token},
 * {@code tls}, {@code trusted-certificates} (a PEM file of CAs), {@code allow-cleartext-token},
 * {@code connect-timeout}, {@code
 * request-timeout}, {@code connections-per-server}, {@code wire-codec} ({@code none} or {@code
 * lz4}) and {@code wire-codec-filter} (a {@link Filter}); defaults as in {@link RemoteTierConfig}.
 * The largest block is the cache's.
 * Every setting with its default: {@code docs/settings.md}.
 */
public final class RemoteTierFactory implements TierFactory {

  @Override
  public String kind() {
    return "remote";
  }

  @Override
  public Tier open(TierSettings settings, int maxBlockBytes) {
    RemoteTierConfig.Builder b = RemoteTierConfig.builder().maxBlockBytes(maxBlockBytes);
    boolean tls = settings.bool("tls", false);
    if (settings.has("servers")) {
      int https = 0;
      String[] servers = settings.string("servers").split(",");
      for (String server : servers) {
        String s = server.trim();
        if (s.startsWith("https://")) {
          https++;
          s = s.substring("https://".length());
        } else if (s.startsWith("http://")) {
          s = s.substring("http://".length());
        }
        HostPort hp = HostPort.parse(settings.name("servers"), s);
        b.server(hp.host, hp.port);
      }
      if (https > 0 && https < servers.length) {
        throw new IllegalArgumentException("setting '" + settings.name("servers")
            + "' mixes https:// and cleartext"
            + " servers; a remote tier speaks TLS to all of them or to none");
      }
      tls |= https > 0;
    }
    if (settings.has("dns")) {
      HostPort hp = HostPort.parse(settings.name("dns"), settings.string("dns").trim());
      b.dns(hp.host, hp.port);
    }
    b.namespace(settings.string("namespace", "default"));
    if (settings.has("token")) {
      b.token(settings.string("token"));
    }
    b.tls(tls);
    if (settings.has("trusted-certificates")) {
      Path ca = Path.of(settings.string("trusted-certificates"));
      settings.checked(() -> b.trustedCertificates(ca), "trusted-certificates");
    }
    b.allowCleartextToken(settings.bool("allow-cleartext-token", false));
    if (settings.has("connect-timeout")) {
      Duration connect = settings.duration("connect-timeout", null);
      settings.checked(() -> b.connectTimeout(connect), "connect-timeout");
    }
    if (settings.has("request-timeout")) {
      Duration request = settings.duration("request-timeout", null);
      settings.checked(() -> b.requestTimeout(request), "request-timeout");
    }
    if (settings.has("connections-per-server")) {
      int connections = settings.integer("connections-per-server", 0);
      settings.checked(() -> b.connectionsPerServer(connections), "connections-per-server");
    }
    Filter filter = settings.choice("wire-codec-filter", Filter.class, Filter.NONE);
    if (settings.choice("wire-codec", WireCodec.class, WireCodec.NONE) == WireCodec.LZ4) {
      b.wireCodec(BlockCodec.builder().filter(filter).build());
    } else if (filter != Filter.NONE) {
      throw new IllegalArgumentException("setting '" + settings.name("wire-codec-filter")
          + "' needs '" + settings.name("wire-codec") + "' = lz4");
    }
    settings.requireAllRead();
    try {
      return new RemoteTier(b.build());
    } catch (IllegalStateException e) {
      throw new IllegalArgumentException("remote tier: " + e.getMessage(), e);
    }
  }

  /** What {@code remote.wire-codec} names. */
  private enum WireCodec {
    NONE,
    LZ4
  }

  private record HostPort(String host, int port) {
    static HostPort parse(String setting, String value) {
      int colon = value.lastIndexOf(':');
      try {
        if (colon > 0) {
          return new HostPort(value.substring(0, colon), Integer.parseInt(value.substring(colon + 1)));
        }
      } catch (NumberFormatException e) {
        // reported below
      }
      throw new IllegalArgumentException("setting '" + setting + "': '" + value
          + "' is not host:port");
    }
  }
}
