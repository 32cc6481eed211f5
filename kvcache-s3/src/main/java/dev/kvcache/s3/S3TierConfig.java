package dev.kvcache.s3;

import static dev.kvcache.s3.SettingChecks.hostAndPort;
import static dev.kvcache.s3.SettingChecks.plainHttpRisk;
import static dev.kvcache.s3.SettingChecks.requirePositive;
import static dev.kvcache.s3.SettingChecks.requireText;

import dev.kvcache.Namespace;
import dev.kvcache.seal.MasterKeys;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * Settings of an {@link S3Tier}, validated by {@link Builder#build()}.
 *
 * <pre>{@code
 * S3TierConfig config = S3TierConfig.builder("kv-fleet", 2L << 40)
 *     .endpoint(URI.create("http://rgw.internal:7480"))
 *     .prefix("prod/")
 *     .build();
 * }</pre>
 *
 * <p>Credentials are the AWS SDK's default provider chain (environment, system properties, profile
 * files, container and instance roles) unless {@link Builder#credentials} sets a key pair.
 */
public final class S3TierConfig {

  /** Default {@link #prefix()}: {@code kvcache/}. */
  public static final String DEFAULT_PREFIX = "kvcache/";
  /** Default {@link #region()}: {@code us-east-1}, which S3-compatible stores accept. */
  public static final String DEFAULT_REGION = "us-east-1";
  /** Default {@link #maxBlockBytes()}: 64 MiB, the cache's default, or the capacity if smaller. */
  public static final int DEFAULT_MAX_BLOCK_BYTES = 64 << 20;
  /** Default {@link #concurrency()}: 32 requests at once. */
  public static final int DEFAULT_CONCURRENCY = 32;
  /** Default {@link #connectTimeout()}: 2 s. */
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(2);
  /** Default {@link #requestTimeout()}: 30 s, room for a 64 MiB block at 20 MB/s. */
  public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(30);
  /** Default {@link #lookupBudget()}: 50 ms, a few HEAD requests' time on AWS S3. */
  public static final Duration DEFAULT_LOOKUP_BUDGET = Duration.ofMillis(50);
  /** Default {@link #listInterval()}: 1 minute. */
  public static final Duration DEFAULT_LIST_INTERVAL = Duration.ofMinutes(1);
  /** Default {@link #indexEntries()}: one million objects (about 150 MiB of heap). */
  public static final int DEFAULT_INDEX_ENTRIES = 1_000_000;

  /** How requests name the bucket. */
  public enum Addressing {
    /** {@code https://endpoint/bucket/key}: MinIO, Ceph RGW, SeaweedFS and most local stores. */
    PATH,
    /** {@code https://bucket.endpoint/key}: AWS S3's own form. */
    VIRTUAL_HOST,
    /** Path style when an endpoint is set, virtual host style for AWS S3 itself. */
    AUTO
  }

  /** Which HTTP client the AWS SDK sends requests with. */
  public enum HttpClient {
    /** The SDK's Netty client (in kvcache-s3's dependencies). */
    NETTY,
    /**
     * The AWS Common Runtime's client, native code: needs {@code software.amazon.awssdk:aws-crt-client}
     * and {@code software.amazon.awssdk.crt:aws-crt} on the class path, and trusts the JVM's
     * certificates only (no {@link #caFile()}).
     */
    CRT
  }

  private final String bucket;
  private final long capacityBytes;
  private final HttpClient httpClient;
  private final URI endpoint;
  private final boolean allowPlainHttp;
  private final String prefix;
  private final String region;
  private final Addressing addressing;
  private final String accessKeyId;
  private final String secretAccessKey;
  private final Path caFile;
  private final int concurrency;
  private final Duration connectTimeout;
  private final Duration requestTimeout;
  private final Duration lookupBudget;
  private final Duration listInterval;
  private final int indexEntries;
  private final int maxBlockBytes;
  private final List<String> fleet;
  private final String fleetDns;
  private final String fleetSelf;
  private final Map<Namespace, Long> quotas;
  private final MasterKeys masterKeys;
  private final Set<Namespace> sealed;

  private S3TierConfig(Builder b) {
    this.bucket = b.bucket;
    this.capacityBytes = b.capacityBytes;
    this.httpClient = b.httpClient;
    this.endpoint = b.endpoint;
    this.allowPlainHttp = b.allowPlainHttp;
    this.prefix = b.prefix;
    this.region = b.region;
    this.addressing = b.addressing;
    this.accessKeyId = b.accessKeyId;
    this.secretAccessKey = b.secretAccessKey;
    this.caFile = b.caFile;
    this.concurrency = b.concurrency;
    this.connectTimeout = b.connectTimeout;
    this.requestTimeout = b.requestTimeout;
    this.lookupBudget = b.lookupBudget;
    this.listInterval = b.listInterval;
    this.indexEntries = b.indexEntries;
    this.maxBlockBytes = b.maxBlockBytes;
    this.fleet = b.fleet;
    this.fleetDns = b.fleetDns;
    this.fleetSelf = b.fleetSelf;
    this.quotas = Map.copyOf(b.quotas);
    this.masterKeys = b.masterKeys;
    this.sealed = Set.copyOf(b.sealed);
  }

  /** The master keys sealed namespaces' objects are sealed under; null if none is sealed. */
  public MasterKeys masterKeys() {
    return masterKeys;
  }

  /** The namespaces whose objects are sealed ({@link Builder#sealing}); none by default. */
  public Set<Namespace> sealed() {
    return sealed;
  }

  /**
   * The bytes of the bucket each namespace with a quota may hold at most ({@link Builder#quota});
   * none by default.
   */
  public Map<Namespace, Long> quotas() {
    return quotas;
  }

  /**
   * A builder for a tier in {@code bucket} that keeps at most {@code capacityBytes} of blocks.
   *
   * @throws IllegalArgumentException if the bucket is not a valid S3 bucket name or the capacity is
   *     not positive
   */
  public static Builder builder(String bucket, long capacityBytes) {
    return new Builder(bucket, capacityBytes);
  }

  /** A builder holding these settings, to change some of them. */
  public Builder toBuilder() {
    Builder b = new Builder(bucket, capacityBytes);
    b.endpoint = endpoint;
    b.allowPlainHttp = allowPlainHttp;
    b.prefix = prefix;
    b.region = region;
    b.addressing = addressing;
    b.accessKeyId = accessKeyId;
    b.secretAccessKey = secretAccessKey;
    b.caFile = caFile;
    b.concurrency = concurrency;
    b.connectTimeout = connectTimeout;
    b.requestTimeout = requestTimeout;
    b.lookupBudget = lookupBudget;
    b.listInterval = listInterval;
    b.indexEntries = indexEntries;
    b.maxBlockBytes = maxBlockBytes;
    b.httpClient = httpClient;
    b.fleet = fleet;
    b.fleetDns = fleetDns;
    b.fleetSelf = fleetSelf;
    b.quotas.putAll(quotas);
    b.masterKeys = masterKeys;
    b.sealed.addAll(sealed);
    return b;
  }

  /** The HTTP client requests go through. */
  public HttpClient httpClient() {
    return httpClient;
  }

  /** The bucket. */
  public String bucket() {
    return bucket;
  }

  /** The most bytes of blocks the tier keeps in the bucket under its prefix. */
  public long capacityBytes() {
    return capacityBytes;
  }

  /** The store's endpoint; empty for AWS S3 in {@link #region()}. */
  public Optional<URI> endpoint() {
    return Optional.ofNullable(endpoint);
  }

  /**
   * Whether a plain {@code http://} endpoint on another host is allowed ({@link
   * Builder#allowPlainHttp}); a loopback endpoint needs no allowance.
   */
  public boolean allowPlainHttp() {
    return allowPlainHttp;
  }

  /** What every object name starts with: empty, or ending in {@code /}. */
  public String prefix() {
    return prefix;
  }

  /** The region requests are signed for. */
  public String region() {
    return region;
  }

  /** Whether requests name the bucket in the path; {@link Addressing#AUTO} resolved. */
  public boolean pathStyle() {
    return addressing == Addressing.PATH || (addressing == Addressing.AUTO && endpoint != null);
  }

  /** The access key id set with {@link Builder#credentials}; empty for the default chain. */
  public Optional<String> accessKeyId() {
    return Optional.ofNullable(accessKeyId);
  }

  /** The secret key set with {@link Builder#credentials}; empty for the default chain. */
  Optional<String> secretAccessKey() {
    return Optional.ofNullable(secretAccessKey);
  }

  /** A PEM file of certificates to trust for TLS instead of the JVM's; empty for the JVM's. */
  public Optional<Path> caFile() {
    return Optional.ofNullable(caFile);
  }

  /** The most requests under way at once. */
  public int concurrency() {
    return concurrency;
  }

  /** How long opening a connection may take. */
  public Duration connectTimeout() {
    return connectTimeout;
  }

  /** How long one request may take, from its start to the last byte of its answer. */
  public Duration requestTimeout() {
    return requestTimeout;
  }

  /**
   * How long one prefix lookup may spend asking the store about keys the tier's index does not
   * know (HEAD requests); past it, an unknown key counts as absent.
   */
  public Duration lookupBudget() {
    return lookupBudget;
  }

  /** How often the tier lists the bucket to learn of objects other servers wrote; zero: never. */
  public Duration listInterval() {
    return listInterval;
  }

  /** The most objects the tier's presence index holds, and so the most objects it keeps. */
  public int indexEntries() {
    return indexEntries;
  }

  /** The largest block the tier takes. */
  public int maxBlockBytes() {
    return maxBlockBytes;
  }

  /**
   * The servers sharing the bucket as the clients name them ({@code host:port}), each evicting the
   * objects it owns by rendezvous hashing; empty if this server is alone or finds them by {@link
   * #fleetDns()}.
   */
  public List<String> fleet() {
    return fleet;
  }

  /**
   * A DNS name and port ({@code name:port}) whose addresses are the servers sharing the bucket, as
   * the clients find them; looked up again every 30 s.
   */
  public Optional<String> fleetDns() {
    return Optional.ofNullable(fleetDns);
  }

  /**
   * This server's {@code host:port} in the fleet; with {@link #fleetDns()} and none given, the
   * address among the name's that belongs to this host.
   */
  public Optional<String> fleetSelf() {
    return Optional.ofNullable(fleetSelf);
  }

  @Override
  public String toString() {
    return "S3TierConfig[bucket " + bucket + ", prefix '" + prefix + "', capacity " + capacityBytes
        + " bytes, endpoint " + (endpoint == null ? "AWS S3 " + region : endpoint)
        + (pathStyle() ? ", path style" : ", virtual host style")
        + (!fleet.isEmpty() ? ", fleet " + fleet + " as " + fleetSelf : "")
        + (fleetDns != null ? ", fleet at " + fleetDns
            + (fleetSelf != null ? " as " + fleetSelf : "") : "")
        + "]";
  }

  /** Builds an {@link S3TierConfig}. */
  public static final class Builder {

    private final String bucket;
    private final long capacityBytes;
    private URI endpoint;
    private boolean allowPlainHttp;
    private String prefix = DEFAULT_PREFIX;
    private String region = DEFAULT_REGION;
    private Addressing addressing = Addressing.AUTO;
    private String accessKeyId;
    private String secretAccessKey;
    private Path caFile;
    private int concurrency = DEFAULT_CONCURRENCY;
    private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;
    private Duration requestTimeout = DEFAULT_REQUEST_TIMEOUT;
    private Duration lookupBudget = DEFAULT_LOOKUP_BUDGET;
    private Duration listInterval = DEFAULT_LIST_INTERVAL;
    private int indexEntries = DEFAULT_INDEX_ENTRIES;
    private List<String> fleet = List.of();
    private String fleetDns;
    private String fleetSelf;
    private int maxBlockBytes;
    private HttpClient httpClient = HttpClient.NETTY;
    private final Map<Namespace, Long> quotas = new LinkedHashMap<>();
    private MasterKeys masterKeys;
    private final Set<Namespace> sealed = new LinkedHashSet<>();

    private Builder(String bucket, long capacityBytes) {
      Objects.requireNonNull(bucket, "bucket");
      if (!bucket.matches("[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")) {
        throw new IllegalArgumentException("'" + bucket + "' is not an S3 bucket name (3 to 63 of"
            + " a-z 0-9 . -, starting and ending with a letter or digit)");
      }
      if (capacityBytes <= 0) {
        throw new IllegalArgumentException(
            "the object tier's capacity must be positive, got " + capacityBytes);
      }
      this.bucket = bucket;
      this.capacityBytes = capacityBytes;
    }

    /**
     * The store's endpoint, such as {@code http://127.0.0.1:9000}; by default AWS S3 in the
     * region.
     *
     * @throws IllegalArgumentException if it is not an http or https URI with a host
     */
    public Builder endpoint(URI endpoint) {
      Objects.requireNonNull(endpoint, "endpoint");
      if (endpoint.getHost() == null
          || !("http".equals(endpoint.getScheme()) || "https".equals(endpoint.getScheme()))) {
        throw new IllegalArgumentException(
            "the S3 endpoint must be an http or https URI with a host, got '" + endpoint + "'");
      }
      this.endpoint = endpoint;
      return this;
    }

    /**
     * Allows a plain {@code http://} endpoint on another host; false by default, and not needed
     * for a loopback endpoint ({@code localhost}, {@code 127.0.0.0/8}, {@code ::1}). Over plain
     * HTTP whoever sits on the link reads the blocks and the signed requests, and can change
     * blocks in flight so that they still match their CRC32C: a checksum detects accidents, not
     * an attacker. Allow it for a store on a network you trust.
     */
    public Builder allowPlainHttp(boolean allow) {
      this.allowPlainHttp = allow;
      return this;
    }

    /**
     * What every object name starts with, so that a bucket can hold other data or several caches;
     * a {@code /} is added if missing. Empty: the bucket's root.
     *
     * @throws IllegalArgumentException if it starts with {@code /} or is longer than 512 bytes
     */
    public Builder prefix(String prefix) {
      Objects.requireNonNull(prefix, "prefix");
      if (prefix.startsWith("/") || prefix.length() > 512) {
        throw new IllegalArgumentException(
            "the object prefix must not start with '/' and be at most 512 characters, got '"
                + prefix + "'");
      }
      this.prefix = prefix.isEmpty() || prefix.endsWith("/") ? prefix : prefix + "/";
      return this;
    }

    /** The region requests are signed for; {@value #DEFAULT_REGION} by default. */
    public Builder region(String region) {
      this.region = requireText("region", region);
      return this;
    }

    /** How requests name the bucket; {@link Addressing#AUTO} by default. */
    public Builder addressing(Addressing addressing) {
      this.addressing = Objects.requireNonNull(addressing, "addressing");
      return this;
    }

    /** A static key pair instead of the SDK's default credentials chain. */
    public Builder credentials(String accessKeyId, String secretAccessKey) {
      this.accessKeyId = requireText("access key id", accessKeyId);
      this.secretAccessKey = requireText("secret access key", secretAccessKey);
      return this;
    }

    /**
     * A PEM file of the certificates to trust for TLS (a private CA), instead of the JVM's.
     *
     * @throws IllegalArgumentException if the file is not readable
     */
    public Builder caFile(Path caFile) {
      Objects.requireNonNull(caFile, "caFile");
      if (!java.nio.file.Files.isReadable(caFile)) {
        throw new IllegalArgumentException("the CA file " + caFile + " is not a readable file");
      }
      this.caFile = caFile;
      return this;
    }

    /** The most requests under way at once, 1 to 1024; {@value #DEFAULT_CONCURRENCY} by default. */
    public Builder concurrency(int concurrency) {
      if (concurrency < 1 || concurrency > 1024) {
        throw new IllegalArgumentException("concurrency must be 1 to 1024, got " + concurrency);
      }
      this.concurrency = concurrency;
      return this;
    }

    /** How long opening a connection may take; 2 s by default. */
    public Builder connectTimeout(Duration timeout) {
      this.connectTimeout = requirePositive("connect timeout", timeout);
      return this;
    }

    /** How long one request may take; 30 s by default. */
    public Builder requestTimeout(Duration timeout) {
      this.requestTimeout = requirePositive("request timeout", timeout);
      return this;
    }

    /** How long a prefix lookup may ask the store about unknown keys; 50 ms by default. */
    public Builder lookupBudget(Duration budget) {
      Objects.requireNonNull(budget, "lookup budget");
      if (budget.isNegative()) {
        throw new IllegalArgumentException("the lookup budget must not be negative, got " + budget);
      }
      this.lookupBudget = budget;
      return this;
    }

    /** How often the bucket is listed; zero never; 1 minute by default. */
    public Builder listInterval(Duration interval) {
      Objects.requireNonNull(interval, "list interval");
      if (interval.isNegative()) {
        throw new IllegalArgumentException("the list interval must not be negative, got "
            + interval);
      }
      this.listInterval = interval;
      return this;
    }

    /**
     * The bytes of the bucket {@code namespace}'s objects may hold at most, as the capacity is
     * kept (each server of a fleet holds its share): at its quota the namespace's least recently
     * used objects are evicted, never another namespace's; the namespaces without a quota share the
     * rest of the capacity and borrow what a quota leaves unused until its namespace needs it.
     *
     * @throws IllegalArgumentException if {@code bytes} is not positive
     */
    public Builder quota(Namespace namespace, long bytes) {
      Objects.requireNonNull(namespace, "namespace");
      if (bytes <= 0) {
        throw new IllegalArgumentException("the object tier's quota of " + namespace
            + " must be positive, got " + bytes);
      }
      quotas.put(namespace, bytes);
      return this;
    }

    /**
     * Seals the objects of {@code namespaces} with AES-256-GCM under a key per namespace derived
     * from {@code masterKeys} and the namespace's salt, an object of its folder that every server
     * of the fleet shares ({@code dev.kvcache.seal.Sealer}): the bucket holds none of their bytes
     * as they were. The servers of a fleet must be given the same master keys and sealed
     * namespaces. A sealed namespace reads only objects sealed for it, and another reads none that
     * is sealed: an object that does not open is a miss, counted, never other bytes. None by
     * default.
     */
    public Builder sealing(MasterKeys masterKeys, Collection<Namespace> namespaces) {
      this.masterKeys = Objects.requireNonNull(masterKeys, "masterKeys");
      this.sealed.addAll(namespaces);
      return this;
    }

    /** The most objects the presence index holds; one million by default. */
    public Builder indexEntries(int entries) {
      if (entries < 1) {
        throw new IllegalArgumentException("index entries must be positive, got " + entries);
      }
      this.indexEntries = entries;
      return this;
    }

    /** The largest block the tier takes; 64 MiB, or the capacity if smaller, by default. */
    public Builder maxBlockBytes(int maxBlockBytes) {
      if (maxBlockBytes < 1) {
        throw new IllegalArgumentException(
            "the largest block must be positive, got " + maxBlockBytes);
      }
      this.maxBlockBytes = maxBlockBytes;
      return this;
    }

    /**
     * The servers sharing the bucket, as the clients name them ({@code host:port}), and which of
     * them this one is. Each server evicts the objects it owns (the key's server by rendezvous
     * hashing, as the clients pick it), keeping their bytes to its share of the capacity: the
     * capacity is the bucket's, divided by the number of servers. None by default: a server alone
     * evicts every object it knows.
     *
     * @throws IllegalArgumentException if a server is not {@code host:port} or {@code self} is
     *     not one of them
     */
    public Builder fleet(List<String> servers, String self) {
      Objects.requireNonNull(servers, "servers");
      List<String> checked = servers.stream().map(s -> hostAndPort("fleet server", s)).toList();
      if (checked.isEmpty()) {
        throw new IllegalArgumentException("a fleet needs at least one server");
      }
      if (checked.stream().distinct().count() != checked.size()) {
        throw new IllegalArgumentException("the fleet names a server twice: " + checked);
      }
      String me = hostAndPort("fleet self", self);
      if (!checked.contains(me)) {
        throw new IllegalArgumentException("this server (" + me + ") is not one of the fleet's "
            + checked + ": name it as the clients do");
      }
      this.fleet = checked;
      this.fleetDns = null;
      this.fleetSelf = me;
      return this;
    }

    /**
     * As {@link #fleet}, with the servers the addresses of a DNS name (a Kubernetes headless
     * Service), looked up again every 30 s; {@code self} (may be null) is this server's {@code
     * address:port}, found among the name's addresses by default. A server whose address the
     * name does not list (yet) owns no object.
     */
    public Builder fleetDns(String nameAndPort, String self) {
      this.fleetDns = hostAndPort("fleet DNS name", nameAndPort);
      this.fleetSelf = self == null ? null : hostAndPort("fleet self", self);
      this.fleet = List.of();
      return this;
    }

    /** The HTTP client requests go through; {@link HttpClient#NETTY} by default. */
    public Builder httpClient(HttpClient httpClient) {
      this.httpClient = Objects.requireNonNull(httpClient, "httpClient");
      return this;
    }

    /**
     * The settings.
     *
     * @throws IllegalArgumentException if the largest block exceeds the capacity, or the endpoint
     *     is plain HTTP on another host and that is not allowed ({@link #allowPlainHttp})
     */
    public S3TierConfig build() {
      long quoted = quotas.values().stream().mapToLong(Long::longValue).sum();
      if (quoted >= capacityBytes) {
        throw new IllegalArgumentException("the object tier's quotas take " + quoted + " of its"
            + " capacity of " + capacityBytes + " bytes: they must leave some to the namespaces"
            + " without a quota");
      }
      if (!allowPlainHttp) {
        plainHttpRisk(endpoint).ifPresent(risk -> {
          throw new IllegalArgumentException("the S3 endpoint " + risk
              + " for a store on a network you trust");
        });
      }
      if (httpClient == HttpClient.CRT && caFile != null) {
        throw new IllegalArgumentException("the CRT HTTP client trusts the JVM's certificates"
            + " only: use the Netty client with a CA file");
      }
      if (maxBlockBytes == 0) {
        maxBlockBytes = (int) Math.min(DEFAULT_MAX_BLOCK_BYTES, capacityBytes);
      }
      if (maxBlockBytes > capacityBytes) {
        throw new IllegalArgumentException("the largest block (" + maxBlockBytes
            + " bytes) exceeds the object tier's capacity (" + capacityBytes + " bytes)");
      }
      return new S3TierConfig(this);
    }
  }
}
