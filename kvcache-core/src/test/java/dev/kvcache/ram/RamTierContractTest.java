package dev.kvcache.ram;

import dev.kvcache.spi.Tier;
import dev.kvcache.testkit.TierContractTest;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Tag;

/** The tier contract for the RAM tier, under each {@link RamPolicy}. */
@Tag("contract")
class RamTierContractTest {

  private static Tier tier(RamPolicy policy, long capacityBytes, int maxBlockBytes) {
    return new RamTier(RamTierConfig.ofCapacity(capacityBytes).withMaxBlockBytes(maxBlockBytes)
        .withPolicy(policy));
  }

  @Nested
  class Lru extends TierContractTest {
    @Override
    protected Tier newTier(long capacityBytes, int maxBlockBytes) {
      return tier(RamPolicy.LRU, capacityBytes, maxBlockBytes);
    }
  }

  @Nested
  class WTinyLfu extends TierContractTest {
    @Override
    protected Tier newTier(long capacityBytes, int maxBlockBytes) {
      return tier(RamPolicy.W_TINY_LFU, capacityBytes, maxBlockBytes);
    }
  }
}
