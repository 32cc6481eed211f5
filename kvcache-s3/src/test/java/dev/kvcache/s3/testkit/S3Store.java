package dev.kvcache.s3.testkit;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import software.amazon.awssdk.services.s3.S3AsyncClient;

/**
 * An {@link InProcessS3} for the tests of a class, with a plain SDK client of it to look into the
 * bucket as any S3 user would: started before the first test, stopped after the last. Registered
 * as {@code @RegisterExtension static final S3Store store = new S3Store();}.
 */
public final class S3Store implements BeforeAllCallback, AfterAllCallback {

  private InProcessS3 server;
  private S3AsyncClient bucket;

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    server = new InProcessS3();
    bucket = server.client();
  }

  @Override
  public void afterAll(ExtensionContext context) {
    bucket.close();
    server.close();
  }

  /** The S3 server. */
  public InProcessS3 server() {
    return server;
  }

  /** A plain SDK client of the server. */
  public S3AsyncClient bucket() {
    return bucket;
  }
}
