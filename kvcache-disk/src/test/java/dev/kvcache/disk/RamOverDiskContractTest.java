package dev.kvcache.disk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.CacheStats;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.spi.Tier;
import dev.kvcache.testkit.TierContractTest;
import dev.kvcache.tiered.TieredCache;
import dev.kvcache.tiered.TieredCacheConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;

/** The tier contract on the product's usual stack: the RAM tier over the disk tier (a quarter and three quarters of the budget). */
class RamOverDiskContractTest extends TierContractTest {

  @TempDir Path temp;
  private int tiers;

  @Override
  protected Tier newTier(long capacityBytes, int maxBlockBytes) {
    try {
      long ram = capacityBytes / 4;
      long diskBytes = capacityBytes - ram;
      DiskTier disk = DiskTier.open(DiskTierConfig.builder(temp.resolve("tier-" + tiers++), diskBytes)
          .superBlockBytes(diskBytes / 4)
          .maxBlockBytes(maxBlockBytes)
          .minFreeBytes(0)
          .syncPolicy(SyncPolicy.NONE)
          .build());
      return new TieredCache(RamTierConfig.ofCapacity(ram).withMaxBlockBytes(maxBlockBytes), disk,
          TieredCacheConfig.defaults());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The disk tier's files stay after close, within its capacity. */
  @Override
  protected void assertNothingRetainedAfterClose(CacheStats stats) {
    assertThat(stats.bytesUsed()).isLessThanOrEqualTo(stats.capacityBytes());
  }
}
