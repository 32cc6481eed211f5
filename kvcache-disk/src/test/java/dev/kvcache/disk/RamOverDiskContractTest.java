package dev.kvcache.disk;

import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.spi.Tier;
import dev.kvcache.tiered.TieredCache;
import dev.kvcache.tiered.TieredCacheConfig;
import org.junit.jupiter.api.Tag;

/**
 * The tier contract on the product's usual stack: the RAM tier over the disk tier (a quarter and
 * three quarters of the budget), the disk tier opened as {@link DiskTierContractTest} opens it.
 */
@Tag("contract")
class RamOverDiskContractTest extends DiskTierContractTest {

  @Override
  protected Tier newTier(long capacityBytes, int maxBlockBytes) {
    long ram = capacityBytes / 4;
    Tier disk = super.newTier(capacityBytes - ram, maxBlockBytes);
    return new TieredCache(RamTierConfig.ofCapacity(ram).withMaxBlockBytes(maxBlockBytes), disk,
        TieredCacheConfig.defaults());
  }

  /** Blocks go to RAM, which has room at once on an empty cache. */
  @Override
  protected boolean offersWritersWithoutWaiting() {
    return true;
  }
}
