package dev.kvcache.disk;

import org.junit.jupiter.api.Tag;

/**
 * The disk tier keeps the tier contract with every write through the page cache ({@code
 * directWrites(false)}); {@link DiskTierContractTest} runs it with the default, direct writes.
 */
@Tag("contract")
class PageCacheWritesContractTest extends DiskTierContractTest {

  @Override
  protected DiskTierConfig.Builder configure(DiskTierConfig.Builder builder, long capacityBytes) {
    return builder.directWrites(false);
  }
}
