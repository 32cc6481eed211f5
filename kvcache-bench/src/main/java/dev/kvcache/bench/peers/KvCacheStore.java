package dev.kvcache.bench.peers;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import java.nio.ByteBuffer;

/** kvcache's RAM tier. */
final class KvCacheStore implements PeerStore {
  private final RamTier tier;

  KvCacheStore(long capacityBytes, int blockSizeBytes) {
    tier = new RamTier(RamTierConfig.ofCapacity(capacityBytes).withMaxBlockBytes(blockSizeBytes));
  }

  @Override
  public boolean put(long id, ByteBuffer src) {
    return tier.put(BlockKey.of(0, id), src) == PutStatus.STORED;
  }

  @Override
  public boolean getInto(long id, ByteBuffer dst) {
    dst.clear();
    return tier.getInto(BlockKey.of(0, id), dst) == GetStatus.HIT;
  }

  @Override
  public void close() {
    tier.close();
  }
}
