package dev.kvcache.s3;

import dev.kvcache.s3.S3TierConfig.Addressing;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierFactory;
import dev.kvcache.spi.TierSettings;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * Opens the object tier for {@link dev.kvcache.KvCacheConfig}. Settings, under {@code s3.}: {@code
 * bucket} and {@code capacity} (required), {@code endpoint} (default AWS S3), {@code prefix},
 * {@code region}, {@code addressing} ({@code path}, {@code virtual_host}, {@code auto}), {@code
 * access-key-id} with {@code secret-access-key} (default: the SDK's credentials chain), {@code
 * ca-file}, {@code http-client} ({@code netty}, {@code crt}), {@code concurrency}, {@code connect-timeout}, {@code request-timeout}, {@code
 * lookup-budget}, {@code list-interval}, {@code index-entries}; defaults as in {@link
 * S3TierConfig}. The largest block is the cache's.
 */
public final class S3TierFactory implements TierFactory {

  @Override
  public String kind() {
    return "s3";
  }

  @Override
  public Tier open(TierSettings settings, int maxBlockBytes) throws IOException {
    S3TierConfig.Builder b = S3TierConfig.builder(settings.string("bucket"),
        settings.bytes("capacity"));
    b.maxBlockBytes(maxBlockBytes);
    String endpoint = settings.string("endpoint", "");
    if (!endpoint.isBlank()) {
      try {
        b.endpoint(URI.create(endpoint.strip()));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("setting 's3.endpoint': " + e.getMessage(), e);
      }
    }
    if (settings.has("prefix")) {
      b.prefix(settings.string("prefix"));
    }
    b.region(settings.string("region", S3TierConfig.DEFAULT_REGION));
    b.addressing(settings.choice("addressing", Addressing.class, Addressing.AUTO));
    b.httpClient(settings.choice("http-client", S3TierConfig.HttpClient.class,
        S3TierConfig.HttpClient.NETTY));
    String keyId = settings.string("access-key-id", "");
    String secret = settings.string("secret-access-key", "");
    if (keyId.isBlank() != secret.isBlank()) {
      throw new IllegalArgumentException(
          "settings 's3.access-key-id' and 's3.secret-access-key' go together: set both or none");
    }
    if (!keyId.isBlank()) {
      b.credentials(keyId, secret);
    }
    String ca = settings.string("ca-file", "");
    if (!ca.isBlank()) {
      b.caFile(Path.of(ca));
    }
    b.concurrency(settings.integer("concurrency", S3TierConfig.DEFAULT_CONCURRENCY));
    b.connectTimeout(settings.duration("connect-timeout", S3TierConfig.DEFAULT_CONNECT_TIMEOUT));
    b.requestTimeout(settings.duration("request-timeout", S3TierConfig.DEFAULT_REQUEST_TIMEOUT));
    b.lookupBudget(settings.duration("lookup-budget", S3TierConfig.DEFAULT_LOOKUP_BUDGET));
    b.listInterval(settings.duration("list-interval", S3TierConfig.DEFAULT_LIST_INTERVAL));
    b.indexEntries(settings.integer("index-entries", S3TierConfig.DEFAULT_INDEX_ENTRIES));
    List<String> fleet = Arrays.stream(settings.string("fleet", "").split(","))
        .map(String::strip).filter(s -> !s.isEmpty()).toList();
    String dns = settings.string("fleet-dns", "").strip();
    String self = settings.string("fleet-self", "").strip();
    if (!fleet.isEmpty() && !dns.isEmpty()) {
      throw new IllegalArgumentException(
          "settings 's3.fleet' and 's3.fleet-dns' are two ways to name the fleet: set one");
    }
    if (!fleet.isEmpty()) {
      if (self.isEmpty()) {
        throw new IllegalArgumentException("setting 's3.fleet' needs 's3.fleet-self': this"
            + " server's host:port as the list names it");
      }
      b.fleet(fleet, self);
    } else if (!dns.isEmpty()) {
      b.fleetDns(dns, self.isEmpty() ? null : self);
    } else if (!self.isEmpty()) {
      throw new IllegalArgumentException(
          "setting 's3.fleet-self' names this server in a fleet: set 's3.fleet' or 's3.fleet-dns'");
    }
    settings.requireAllRead();
    return S3Tier.open(b.build());
  }
}
