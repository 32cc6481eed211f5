package dev.kvcache.ram;

import dev.kvcache.spi.Tier;
import dev.kvcache.testkit.TierContractTest;

class RamTierContractTest extends TierContractTest {

  @Override
  protected Tier newTier(long capacityBytes, int maxBlockBytes) {
    return new RamTier(RamTierConfig.ofCapacity(capacityBytes).withMaxBlockBytes(maxBlockBytes));
  }
}
