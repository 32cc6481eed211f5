package dev.kvcache.s3;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.CacheStats;
import dev.kvcache.s3.testkit.InProcessS3;
import dev.kvcache.s3.testkit.RcloneS3;
import dev.kvcache.spi.Tier;
import dev.kvcache.testkit.TierContractTest;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Tag;

/**
 * The tier contract, on an object tier over each of two real S3-compatible servers on loopback:
 * S3Proxy in the test's JVM, and rclone in a process of its own.
 */
@Tag("contract")
@Tag("integration")
class S3TierContractTest {

  private static InProcessS3 s3proxy;
  private static RcloneS3 rclone;

  @BeforeAll
  static void startStores() throws Exception {
    s3proxy = new InProcessS3();
    rclone = new RcloneS3();
  }

  @AfterAll
  static void stopStores() {
    s3proxy.close();
    rclone.close();
  }

  abstract static class OnAStore extends TierContractTest {

    abstract S3TierConfig.Builder config(long capacityBytes);

    @Override
    protected Tier newTier(long capacityBytes, int maxBlockBytes) {
      try {
        return S3Tier.open(config(capacityBytes).maxBlockBytes(maxBlockBytes).build());
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    /** The tier opens no writer without waiting: its commit is an upload. */
    @Override
    protected boolean offersWritersWithoutWaiting() {
      return false;
    }

    /** A pin downloads a block when it is read through it, and holds no lease meanwhile. */
    @Override
    protected boolean pinsReadWhenRead() {
      return true;
    }

    @Override
    protected boolean pinsHoldLocalLeases() {
      return false;
    }

    /** The objects stay in the bucket after close, within the capacity. */
    @Override
    protected void assertNothingRetainedAfterClose(CacheStats stats) {
      assertThat(stats.bytesUsed()).isLessThanOrEqualTo(stats.capacityBytes());
    }
  }

  @Nested
  class OnS3Proxy extends OnAStore {
    @Override
    S3TierConfig.Builder config(long capacityBytes) {
      return s3proxy.config(capacityBytes);
    }
  }

  @Nested
  class OnRclone extends OnAStore {
    @Override
    S3TierConfig.Builder config(long capacityBytes) {
      return rclone.config(capacityBytes);
    }
  }
}
