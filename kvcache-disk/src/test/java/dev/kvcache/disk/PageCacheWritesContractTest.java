package dev.kvcache.disk;

/**
 * The disk tier keeps the tier contract with every write through the page cache ({@code
 * directWrites(false)}); {@link DiskTierContractTest} runs it with the default, direct writes.
 */
class PageCacheWritesContractTest extends DiskTierContractTest {

  @Override
  protected DiskTierConfig.Builder configure(DiskTierConfig.Builder builder, long capacityBytes) {
    return builder.directWrites(false);
  }
}
