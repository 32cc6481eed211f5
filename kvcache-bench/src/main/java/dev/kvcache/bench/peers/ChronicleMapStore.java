package dev.kvcache.bench.peers;

import java.nio.ByteBuffer;
import net.openhft.chronicle.map.ChronicleMap;
import net.openhft.chronicle.map.ChronicleMapBuilder;

/**
 * Chronicle Map in memory (not persisted), with ByteBuffer values: a put copies the caller's
 * buffer into the map, {@code getUsing} copies the value straight into the caller's buffer.
 * Chronicle Map has no eviction, so it is sized for the working set.
 */
final class ChronicleMapStore implements PeerStore {
  private final ChronicleMap<Long, ByteBuffer> map;

  ChronicleMapStore(int blockSizeBytes, int blocks) {
    map =
        ChronicleMapBuilder.of(Long.class, ByteBuffer.class)
            .name("kv-blocks")
            .entries(blocks)
            .averageValueSize(blockSizeBytes)
            .create();
  }

  @Override
  public boolean put(long id, ByteBuffer src) {
    map.put(id, src.duplicate());
    return true;
  }

  @Override
  public boolean getInto(long id, ByteBuffer dst) {
    dst.clear();
    if (map.getUsing(id, dst) == null) {
      return false;
    }
    dst.position(dst.limit()); // getUsing leaves the value between 0 and limit
    return true;
  }

  @Override
  public void close() {
    map.close();
  }
}
