package dev.kvcache.disk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.CacheStats;
import dev.kvcache.spi.Tier;
import dev.kvcache.testkit.TierContractTest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

@Tag("contract")
class DiskTierContractTest extends TierContractTest {

  @TempDir Path temp;
  private int tiers;

  @Override
  protected Tier newTier(long capacityBytes, int maxBlockBytes) {
    try {
      return DiskTier.open(configure(DiskTierConfig.builder(temp.resolve("tier-" + tiers++),
              capacityBytes)
          .superBlockBytes(capacityBytes / 4)
          .maxBlockBytes(maxBlockBytes)
          .minFreeBytes(0)
          .syncPolicy(SyncPolicy.NONE), capacityBytes)
          .build());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The settings of a tier of {@code capacityBytes}, as a subclass runs the suite with them. */
  protected DiskTierConfig.Builder configure(DiskTierConfig.Builder builder, long capacityBytes) {
    return builder;
  }

  /** The disk tier offers none (the default {@code tryWriter}): its writers may wait for room. */
  @Override
  protected boolean offersWritersWithoutWaiting() {
    return false;
  }

  /** The files stay on disk after close, within the capacity. */
  @Override
  protected void assertNothingRetainedAfterClose(CacheStats stats) {
    assertThat(stats.bytesUsed()).isLessThanOrEqualTo(stats.capacityBytes());
  }
}
