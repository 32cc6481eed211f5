package dev.kvcache.disk;

import dev.kvcache.disk.device.MemoryDevice;
import org.junit.jupiter.api.Tag;

/** The disk tier keeps the tier contract over files in memory ({@link MemoryDevice}). */
@Tag("contract")
class MemoryDeviceContractTest extends DiskTierContractTest {

  @Override
  protected DiskTierConfig.Builder configure(DiskTierConfig.Builder builder, long capacityBytes) {
    return builder.device(new MemoryDevice(4 * capacityBytes))
        .syncPolicy(SyncPolicy.ALWAYS); // a force costs nothing here
  }
}
