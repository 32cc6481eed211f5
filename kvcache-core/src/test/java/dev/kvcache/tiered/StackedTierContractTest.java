package dev.kvcache.tiered;

import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.spi.Tier;
import dev.kvcache.testkit.TierContractTest;
import org.junit.jupiter.api.Tag;

/**
 * The tier contract for a stacked tier: a RAM tier over another, each with half the budget, every
 * block uploaded to the backing one behind the put.
 */
@Tag("contract")
class StackedTierContractTest extends TierContractTest {

  @Override
  protected Tier newTier(long capacityBytes, int maxBlockBytes) {
    RamTierConfig half = RamTierConfig.ofCapacity(capacityBytes / 2).withMaxBlockBytes(maxBlockBytes);
    return new StackedTier(new RamTier(half), new RamTier(half), StackedTierConfig.defaults());
  }

  /** Uploads run behind the puts: the counters hold still once they are done. */
  @Override
  protected void settle(Tier tier) {
    try {
      ((StackedTier) tier).awaitUploads(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The default {@code tryWriter}: a stacked tier offers none. */
  @Override
  protected boolean offersWritersWithoutWaiting() {
    return false;
  }
}
