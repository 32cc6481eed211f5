package dev.kvcache.disk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.CacheStats;
import dev.kvcache.disk.device.MemoryDevice;
import dev.kvcache.spi.Tier;
import dev.kvcache.testkit.TierContractTest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;

/** The disk tier keeps the tier contract over files in memory ({@link MemoryDevice}). */
class MemoryDeviceContractTest extends TierContractTest {

  private int tiers;

  @Override
  protected Tier newTier(long capacityBytes, int maxBlockBytes) {
    try {
      return DiskTier.open(DiskTierConfig.builder(Path.of("/memory/tier-" + tiers++), capacityBytes)
          .device(new MemoryDevice(4 * capacityBytes))
          .superBlockBytes(capacityBytes / 4)
          .maxBlockBytes(maxBlockBytes)
          .minFreeBytes(0)
          .syncPolicy(SyncPolicy.ALWAYS) // a force costs nothing here
          .build());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  protected boolean offersWritersWithoutWaiting() {
    return false;
  }

  @Override
  protected void assertNothingRetainedAfterClose(CacheStats stats) {
    assertThat(stats.bytesUsed()).isLessThanOrEqualTo(stats.capacityBytes());
  }
}
