package dev.kvcache.client;

import dev.kvcache.codec.BlockCodec;
import dev.kvcache.codec.Filter;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierFactory;
import dev.kvcache.spi.TierSettings;

/**
 * Opens a {@link RemoteTier} from the {@code remote.*} settings of a {@code KvCacheConfig} with
 * {@code lower = remote}: {@code servers} ({@code host:port} list, comma-separated) or {@code dns}
 * ({@code name:port}), {@code namespace}, {@code token}, {@code connect-timeout}, {@code
 * request-timeout}, {@code connections-per-server}, {@code wire-codec} ({@code none} or {@code
 * lz4}) and {@code wire-codec-filter} (a {@link Filter}); defaults as in {@link RemoteTierConfig}.
 * The largest block is the cache's.
 */
public final class RemoteTierFactory implements TierFactory {

  @Override
  public String kind() {
    return "remote";
  }

  @Override
  public Tier open(TierSettings settings, int maxBlockBytes) {
    RemoteTierConfig.Builder b = RemoteTierConfig.builder().maxBlockBytes(maxBlockBytes);
    if (settings.has("servers")) {
      for (String server : settings.string("servers").split(",")) {
        HostPort hp = HostPort.parse("remote.servers", server.trim());
        b.server(hp.host, hp.port);
      }
    }
    if (settings.has("dns")) {
      HostPort hp = HostPort.parse("remote.dns", settings.string("dns").trim());
      b.dns(hp.host, hp.port);
    }
    b.namespace(settings.string("namespace", "default"));
    if (settings.has("token")) {
      b.token(settings.string("token"));
    }
    if (settings.has("connect-timeout")) {
      b.connectTimeout(settings.duration("connect-timeout", null));
    }
    if (settings.has("request-timeout")) {
      b.requestTimeout(settings.duration("request-timeout", null));
    }
    if (settings.has("connections-per-server")) {
      b.connectionsPerServer(settings.integer("connections-per-server", 0));
    }
    Filter filter = settings.choice("wire-codec-filter", Filter.class, Filter.NONE);
    if (settings.choice("wire-codec", WireCodec.class, WireCodec.NONE) == WireCodec.LZ4) {
      b.wireCodec(BlockCodec.builder().filter(filter).build());
    } else if (filter != Filter.NONE) {
      throw new IllegalArgumentException("setting 'remote.wire-codec-filter' needs 'remote.wire-codec' = lz4");
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
