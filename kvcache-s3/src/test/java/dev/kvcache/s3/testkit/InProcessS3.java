package dev.kvcache.s3.testkit;

import java.net.URI;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import dev.kvcache.s3.S3TierConfig;
import org.gaul.s3proxy.S3Proxy;
import org.gaul.s3proxy.auth.AuthenticationType;
import org.gaul.s3proxy.nio2blob.TransientNio2BlobStore;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.nio.netty.NettyNioAsyncHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3AsyncClient;

/**
 * A real S3-compatible server in the test's JVM: S3Proxy over an in-memory store, on a loopback
 * port, requiring signed requests. Each {@link #config} names a prefix of its own, so that tiers
 * of one test never see another's objects.
 */
public final class InProcessS3 implements AutoCloseable {

  public static final String BUCKET = "kvcache-test";
  public static final String ACCESS_KEY = "test-access";
  public static final String SECRET_KEY = "test-secret-key";

  private static final AtomicInteger prefixes = new AtomicInteger();

  private final TransientNio2BlobStore store = new TransientNio2BlobStore();
  private final URI endpoint;
  private S3Proxy proxy;

  public InProcessS3() throws Exception {
    store.createContainer(BUCKET);
    endpoint = URI.create("http://127.0.0.1:" + start(0));
  }

  /** Starts serving the store on {@code port} (0: any); returns the port. */
  private int start(int port) throws Exception {
    proxy = S3Proxy.builder()
        .blobStore(store)
        .endpoint(URI.create("http://127.0.0.1:" + port))
        .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, ACCESS_KEY, SECRET_KEY)
        .build();
    proxy.start();
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (!"STARTED".equals(proxy.getState()) && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    return proxy.getPort();
  }

  /**
   * Settings ({@code KvCacheConfig.of}) of a stack as a server stacks it: 4 MiB of RAM, write
   * behind, over a 16 MiB disk tier in {@code diskDir} (super-blocks of 4 MiB, no syncs), over
   * this store's bucket under {@code prefix}, reached at {@code endpoint} (this store's, or a
   * proxy's in front of it), with a lookup budget of 5 s.
   */
  public Map<String, String> stackSettings(Path diskDir, URI endpoint, String prefix) {
    Map<String, String> s = new TreeMap<>();
    s.put("ram.bytes", "4MiB");
    s.put("ram.max-block-bytes", "1MiB");
    s.put("lower", "disk, s3");
    s.put("tiered.durability", "write_behind");
    s.put("disk.dir", diskDir.toString());
    s.put("disk.capacity", "16MiB");
    s.put("disk.super-block", "4MiB");
    s.put("disk.min-free", "0B");
    s.put("disk.sync-policy", "none");
    s.put("s3.endpoint", endpoint.toString());
    s.put("s3.bucket", BUCKET);
    s.put("s3.capacity", "64MiB");
    s.put("s3.prefix", prefix);
    s.put("s3.access-key-id", ACCESS_KEY);
    s.put("s3.secret-access-key", SECRET_KEY);
    s.put("s3.lookup-budget", "5s");
    return s;
  }

  /** Stops answering: connections to the endpoint are refused. The objects are kept. */
  public void stop() throws Exception {
    proxy.stop();
  }

  /** Answers again, on the same endpoint, with the objects it had. */
  public void restart() throws Exception {
    start(endpoint.getPort());
  }

  /** A plain SDK client of this server, to look into the bucket as any S3 user would. */
  public S3AsyncClient client() {
    return S3AsyncClient.builder()
        .endpointOverride(endpoint)
        .region(Region.US_EAST_1)
        .forcePathStyle(true)
        .credentialsProvider(StaticCredentialsProvider.create(
            AwsBasicCredentials.create(ACCESS_KEY, SECRET_KEY)))
        .httpClientBuilder(NettyNioAsyncHttpClient.builder())
        .build();
  }

  public URI endpoint() {
    return endpoint;
  }

  /** Settings of a tier under a new prefix of this server's bucket. */
  public S3TierConfig.Builder config(long capacityBytes) {
    return config(capacityBytes, "t" + prefixes.incrementAndGet() + "/");
  }

  /** Settings of a tier under {@code prefix} of this server's bucket. */
  public S3TierConfig.Builder config(long capacityBytes, String prefix) {
    return S3TierConfig.builder(BUCKET, capacityBytes)
        .endpoint(endpoint)
        .credentials(ACCESS_KEY, SECRET_KEY)
        .prefix(prefix);
  }

  @Override
  public void close() {
    try {
      proxy.stop();
    } catch (Exception e) {
      throw new IllegalStateException("S3Proxy did not stop", e);
    }
  }
}
