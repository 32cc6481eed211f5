package dev.kvcache.s3;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.CacheStats;
import dev.kvcache.s3.testkit.InProcessS3;
import dev.kvcache.spi.Tier;
import dev.kvcache.testkit.TierContractTest;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The tier contract, on an object tier over a real S3-compatible server on loopback. */
class S3TierContractTest extends TierContractTest {

  private static InProcessS3 s3;

  @BeforeAll
  static void startStore() throws Exception {
    s3 = new InProcessS3();
  }

  @AfterAll
  static void stopStore() throws Exception {
    s3.close();
  }

  @Override
  protected Tier newTier(long capacityBytes, int maxBlockBytes) {
    try {
      return S3Tier.open(s3.config(capacityBytes).maxBlockBytes(maxBlockBytes).build());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The tier opens no writer without waiting: its commit is an upload. */
  @Override
  protected boolean offersWritersWithoutWaiting() {
    return false;
  }

  /** The objects stay in the bucket after close, within the capacity. */
  @Override
  protected void assertNothingRetainedAfterClose(CacheStats stats) {
    assertThat(stats.bytesUsed()).isLessThanOrEqualTo(stats.capacityBytes());
  }
}
