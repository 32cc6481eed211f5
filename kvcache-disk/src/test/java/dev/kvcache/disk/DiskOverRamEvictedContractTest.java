package dev.kvcache.disk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.CacheStats;
import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.spi.Tier;
import dev.kvcache.testkit.TierContractTest;
import dev.kvcache.tiered.StackedTier;
import dev.kvcache.tiered.StackedTierConfig;
import dev.kvcache.tiered.StackedTierConfig.Upload;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;

/**
 * The tier contract for a disk tier over a backing tier that receives only what the disk evicts:
 * the live blocks of each super-block it drops, handed over as leases and uploaded behind.
 */
@Tag("contract")
class DiskOverRamEvictedContractTest extends TierContractTest {

  @TempDir Path temp;
  private int tiers;

  @Override
  protected Tier newTier(long capacityBytes, int maxBlockBytes) {
    try {
      DiskTier disk = DiskTier.open(DiskTierConfig.builder(temp.resolve("tier-" + tiers++),
              capacityBytes / 4 * 3)
          .superBlockBytes(capacityBytes / 16 * 3)
          .maxBlockBytes(maxBlockBytes)
          .minFreeBytes(0)
          .syncPolicy(SyncPolicy.NONE)
          .build());
      RamTier backing = new RamTier(RamTierConfig.ofCapacity(capacityBytes / 4)
          .withMaxBlockBytes(maxBlockBytes));
      return new StackedTier(disk, backing,
          StackedTierConfig.defaults().withUpload(Upload.EVICTED));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Uploads run behind the evictions: the counters hold still once they are done. */
  @Override
  protected void settle(Tier tier) {
    try {
      ((StackedTier) tier).awaitUploads(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  protected boolean offersWritersWithoutWaiting() {
    return false;
  }

  /** The disk's files stay after close, within its capacity. */
  @Override
  protected void assertNothingRetainedAfterClose(CacheStats stats) {
    assertThat(stats.bytesUsed()).isLessThanOrEqualTo(stats.capacityBytes());
  }
}
