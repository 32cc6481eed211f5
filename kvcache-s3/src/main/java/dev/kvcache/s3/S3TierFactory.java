package dev.kvcache.s3;

import dev.kvcache.Namespace;
import dev.kvcache.s3.S3TierConfig.Addressing;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierFactory;
import dev.kvcache.spi.TierPolicies;
import dev.kvcache.spi.TierSettings;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Opens the object tier for {@link dev.kvcache.tiered.KvCacheConfig}. Settings, under {@code s3.}: {@code
 * bucket} and {@code capacity} (required), {@code endpoint} (default AWS S3), {@code
 * allow-plain-http}, {@code prefix}, {@code region}, {@code addressing} ({@code path}, {@code virtual_host}, {@code auto}), {@code
 * access-key-id} with {@code secret-access-key} (default: the SDK's credentials chain), {@code
 * ca-file}, {@code http-client} ({@code netty}, {@code crt}), {@code concurrency}, {@code connect-timeout}, {@code request-timeout}, {@code
 * lookup-budget}, {@code list-interval}, {@code index-entries}; defaults as in {@link
 * S3TierConfig}. The largest block is the cache's.
 * Every setting with its default, and the name the server gives it: {@code docs/settings.md}.
 */
public final class S3TierFactory implements TierFactory {

  @Override
  public String kind() {
    return "s3";
  }

  @Override
  public Tier open(TierSettings settings, int maxBlockBytes) throws IOException {
    return open(settings, maxBlockBytes, TierPolicies.NONE);
  }

  /**
   * Opens the tier with quotas per namespace ({@link S3TierConfig.Builder#quota}) and sealed
   * namespaces ({@link S3TierConfig.Builder#sealing}).
   */
  @Override
  public Tier open(TierSettings settings, int maxBlockBytes, TierPolicies policies)
      throws IOException {
    Map<Namespace, Long> quotas = policies.quotas();
    String bucket = settings.string("bucket");
    long capacity = settings.bytes("capacity");
    S3TierConfig.Builder b = settings.checked(() -> S3TierConfig.builder(bucket, capacity),
        capacity <= 0 ? "capacity" : "bucket");
    quotas.forEach(b::quota);
    if (!policies.sealed().isEmpty()) {
      b.sealing(policies.masterKeys(), policies.sealed());
    }
    b.maxBlockBytes(maxBlockBytes);
    String endpoint = settings.string("endpoint", "");
    boolean plainHttp = settings.bool("allow-plain-http", false);
    b.allowPlainHttp(plainHttp);
    if (!endpoint.isBlank()) {
      URI uri;
      try {
        uri = URI.create(endpoint.strip());
        b.endpoint(uri);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "setting '" + settings.name("endpoint") + "': " + e.getMessage(), e);
      }
      if (!plainHttp) {
        SettingChecks.plainHttpRisk(uri).ifPresent(risk -> {
          throw new IllegalArgumentException("setting '" + settings.name("endpoint") + "': "
              + risk + " ('" + settings.name("allow-plain-http") + "' = true) for a store on a"
              + " network you trust");
        });
      }
    }
    if (settings.has("prefix")) {
      String prefix = settings.string("prefix");
      settings.checked(() -> b.prefix(prefix), "prefix");
    }
    String region = settings.string("region", S3TierConfig.DEFAULT_REGION);
    settings.checked(() -> b.region(region), "region");
    b.addressing(settings.choice("addressing", Addressing.class, Addressing.AUTO));
    b.httpClient(settings.choice("http-client", S3TierConfig.HttpClient.class,
        S3TierConfig.HttpClient.NETTY));
    String keyId = settings.string("access-key-id", "");
    String secret = settings.string("secret-access-key", "");
    if (keyId.isBlank() != secret.isBlank()) {
      throw new IllegalArgumentException(
          "settings '" + settings.name("access-key-id") + "' and '"
              + settings.name("secret-access-key") + "' go together: set both or none");
    }
    if (!keyId.isBlank()) {
      b.credentials(keyId, secret);
    }
    String ca = settings.string("ca-file", "");
    if (!ca.isBlank()) {
      settings.checked(() -> b.caFile(Path.of(ca)), "ca-file");
    }
    int concurrency = settings.integer("concurrency", S3TierConfig.DEFAULT_CONCURRENCY);
    settings.checked(() -> b.concurrency(concurrency), "concurrency");
    Duration connect = settings.duration("connect-timeout", S3TierConfig.DEFAULT_CONNECT_TIMEOUT);
    settings.checked(() -> b.connectTimeout(connect), "connect-timeout");
    Duration request = settings.duration("request-timeout", S3TierConfig.DEFAULT_REQUEST_TIMEOUT);
    settings.checked(() -> b.requestTimeout(request), "request-timeout");
    Duration budget = settings.duration("lookup-budget", S3TierConfig.DEFAULT_LOOKUP_BUDGET);
    settings.checked(() -> b.lookupBudget(budget), "lookup-budget");
    Duration listing = settings.duration("list-interval", S3TierConfig.DEFAULT_LIST_INTERVAL);
    settings.checked(() -> b.listInterval(listing), "list-interval");
    int entries = settings.integer("index-entries", S3TierConfig.DEFAULT_INDEX_ENTRIES);
    settings.checked(() -> b.indexEntries(entries), "index-entries");
    List<String> fleet = Arrays.stream(settings.string("fleet", "").split(","))
        .map(String::strip).filter(s -> !s.isEmpty()).toList();
    String dns = settings.string("fleet-dns", "").strip();
    String self = settings.string("fleet-self", "").strip();
    if (!fleet.isEmpty() && !dns.isEmpty()) {
      throw new IllegalArgumentException(
          "settings '" + settings.name("fleet") + "' and '" + settings.name("fleet-dns")
              + "' are two ways to name the fleet: set one");
    }
    if (!fleet.isEmpty()) {
      if (self.isEmpty()) {
        throw new IllegalArgumentException("setting '" + settings.name("fleet") + "' needs '"
            + settings.name("fleet-self") + "': this"
            + " server's host:port as the list names it");
      }
      settings.checked(() -> b.fleet(fleet, self), "fleet", "fleet-self");
    } else if (!dns.isEmpty()) {
      settings.checked(() -> b.fleetDns(dns, self.isEmpty() ? null : self), "fleet-dns");
    } else if (!self.isEmpty()) {
      throw new IllegalArgumentException(
          "setting '" + settings.name("fleet-self") + "' names this server in a fleet: set '"
              + settings.name("fleet") + "' or '" + settings.name("fleet-dns") + "'");
    }
    settings.requireAllRead();
    boolean crtWithCa = !ca.isBlank() && settings.choice("http-client",
        S3TierConfig.HttpClient.class, S3TierConfig.HttpClient.NETTY) == S3TierConfig.HttpClient.CRT;
    S3TierConfig config = crtWithCa
        ? settings.checked(b::build, "http-client", "ca-file")
        : settings.checked(b::build, "capacity"); // the largest block must fit it
    return S3Tier.open(config);
  }
}
