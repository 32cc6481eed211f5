package dev.kvcache.s3;

import java.net.URI;
import java.util.concurrent.atomic.AtomicInteger;
import org.gaul.s3proxy.S3Proxy;
import org.gaul.s3proxy.auth.AuthenticationType;
import org.gaul.s3proxy.nio2blob.TransientNio2BlobStore;

/**
 * A real S3-compatible server in the test's JVM: S3Proxy over an in-memory store, on a loopback
 * port, requiring signed requests. Each {@link #config} names a prefix of its own, so that tiers
 * of one test never see another's objects.
 */
final class InProcessS3 implements AutoCloseable {

  static final String BUCKET = "kvcache-test";
  static final String ACCESS_KEY = "test-access";
  static final String SECRET_KEY = "test-secret-key";

  private static final AtomicInteger prefixes = new AtomicInteger();

  private final S3Proxy proxy;
  private final URI endpoint;

  InProcessS3() throws Exception {
    TransientNio2BlobStore store = new TransientNio2BlobStore();
    store.createContainer(BUCKET);
    proxy = S3Proxy.builder()
        .blobStore(store)
        .endpoint(URI.create("http://127.0.0.1:0"))
        .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, ACCESS_KEY, SECRET_KEY)
        .build();
    proxy.start();
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (!"STARTED".equals(proxy.getState()) && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    endpoint = URI.create("http://127.0.0.1:" + proxy.getPort());
  }

  URI endpoint() {
    return endpoint;
  }

  /** Settings of a tier under a new prefix of this server's bucket. */
  S3TierConfig.Builder config(long capacityBytes) {
    return config(capacityBytes, "t" + prefixes.incrementAndGet() + "/");
  }

  /** Settings of a tier under {@code prefix} of this server's bucket. */
  S3TierConfig.Builder config(long capacityBytes, String prefix) {
    return S3TierConfig.builder(BUCKET, capacityBytes)
        .endpoint(endpoint)
        .credentials(ACCESS_KEY, SECRET_KEY)
        .prefix(prefix);
  }

  @Override
  public void close() throws Exception {
    proxy.stop();
  }
}
