package dev.kvcache.disk;

import dev.kvcache.BlockKey;
import dev.kvcache.disk.internal.Location;
import dev.kvcache.disk.internal.SuperBlock;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.BooleanSupplier;

/**
 * A walk over the disk tier's whole index that reads something of each block's record (its tag,
 * its namespace), the record's super-block pinned meanwhile: what a listener is told after a
 * restart, which blocks a namespace's removal deletes.
 */
final class IndexWalk {

  private IndexWalk() {}

  /** What a walk reads of a record, its super-block pinned. */
  interface RecordReader<T> {
    T read(BlockKey key, SuperBlock sb, Location loc);
  }

  /**
   * Reads each indexed block's record with {@code reader} and hands what it read to {@code
   * action}; passes by records whose super-blocks are dropped meanwhile, and stops once {@code
   * closed} says so.
   */
  static <T> void forEachRecord(BlockIndex index, Map<Integer, SuperBlock> superBlocks,
      BooleanSupplier closed, RecordReader<T> reader, BiConsumer<BlockKey, T> action) {
    for (Map.Entry<BlockKey, Location> e : index.entries()) {
      if (closed.getAsBoolean()) {
        return;
      }
      Location loc = e.getValue();
      SuperBlock sb = superBlocks.get(loc.superBlockId);
      if (sb == null || !sb.pin()) {
        continue; // dropped meanwhile
      }
      T read;
      try {
        read = reader.read(e.getKey(), sb, loc);
      } finally {
        sb.unpin();
      }
      action.accept(e.getKey(), read);
    }
  }
}
