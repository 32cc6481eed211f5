package dev.kvcache.disk;

/**
 * The disk tier keeps the tier contract with block payloads written past the page cache
 * ({@code O_DIRECT} on the file system of the test's temporary directory).
 */
class DirectWritesContractTest extends DiskTierContractTest {

  @Override
  protected DiskTierConfig.Builder configure(DiskTierConfig.Builder builder, long capacityBytes) {
    return builder.directWrites(true);
  }
}
