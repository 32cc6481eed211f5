package dev.kvcache.bench.peers;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.disk.DiskTier;
import dev.kvcache.disk.DiskTierConfig;
import dev.kvcache.disk.SyncPolicy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;

/** kvcache's disk tier, without forcing (as none of the disk peers forces by default). */
final class KvCacheDiskStore implements PeerStore {
  private final DiskTier tier;

  KvCacheDiskStore(Path dir, long capacityBytes, int blockSizeBytes) {
    try {
      // reads from the page cache, as the peers' do: the comparison is of warm reads
      tier = DiskTier.open(DiskTierConfig.builder(dir, capacityBytes).maxBlockBytes(blockSizeBytes)
          .minFreeBytes(0).syncPolicy(SyncPolicy.NONE).directReads(false).build());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
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
