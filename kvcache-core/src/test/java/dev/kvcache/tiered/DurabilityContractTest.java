package dev.kvcache.tiered;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.spi.Tier;
import dev.kvcache.testkit.TierContractTest;
import java.time.Duration;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Tag;

/** The tier contract, on a RAM tier over a second RAM tier, under the durability modes past RAM's. */
@Tag("contract")
class DurabilityContractTest {

  private static Tier tiered(long capacityBytes, int maxBlockBytes, Durability durability) {
    RamTierConfig half = RamTierConfig.ofCapacity(capacityBytes / 2).withMaxBlockBytes(maxBlockBytes);
    return new TieredCache(half, new RamTier(half),
        TieredCacheConfig.defaults().withDurability(durability));
  }

  @Nested
  class WriteBehind extends TierContractTest {
    @Override
    protected Tier newTier(long capacityBytes, int maxBlockBytes) {
      return tiered(capacityBytes, maxBlockBytes, Durability.WRITE_BEHIND);
    }

    @Override
    protected void settle(Tier tier) {
      try {
        assertThat(((TieredCache) tier).awaitSpills(Duration.ofSeconds(10))).isTrue();
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
    }
  }

  @Nested
  class WriteThrough extends TierContractTest {
    @Override
    protected Tier newTier(long capacityBytes, int maxBlockBytes) {
      return tiered(capacityBytes, maxBlockBytes, Durability.WRITE_THROUGH);
    }

    /** A commit writes to the lower tier on the caller's thread: no writer is offered at once. */
    @Override
    protected boolean offersWritersWithoutWaiting() {
      return false;
    }
  }
}
