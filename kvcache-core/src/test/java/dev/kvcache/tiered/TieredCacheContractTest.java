package dev.kvcache.tiered;

import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.spi.Tier;
import dev.kvcache.testkit.TierContractTest;
import org.junit.jupiter.api.Tag;

/** The tier contract, on a RAM tier over a second RAM tier, each with half the budget. */
@Tag("contract")
class TieredCacheContractTest extends TierContractTest {

  @Override
  protected Tier newTier(long capacityBytes, int maxBlockBytes) {
    RamTierConfig half = RamTierConfig.ofCapacity(capacityBytes / 2).withMaxBlockBytes(maxBlockBytes);
    return new TieredCache(half, new RamTier(half), TieredCacheConfig.defaults());
  }
}
