package dev.kvcache.s3;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.spi.PinnedBlocks;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.function.BiFunction;
import java.util.function.Consumer;

/**
 * The blocks of an object tier's prefix pin: keys the tier found in the store, each downloaded only
 * when it is read, so that a lookup costs no download and a load that reads the blocks by key
 * downloads each once. Nothing is held here: the tier marked the blocks used when it pinned them.
 */
final class ObjectPin implements PinnedBlocks {

  private final List<BlockKey> keys;
  private final int[] lengths;
  private final BiFunction<BlockKey, ByteBuffer, GetStatus> download;

  /**
   * @param keys the pinned keys, in order
   * @param lengths each block's length, as the tier's index knows it
   * @param download reads a block into a buffer with room for it: {@link GetStatus#HIT}, or
   *     {@link GetStatus#MISS} with the buffer unchanged
   */
  ObjectPin(List<BlockKey> keys, int[] lengths,
      BiFunction<BlockKey, ByteBuffer, GetStatus> download) {
    this.keys = keys;
    this.lengths = lengths;
    this.download = download;
  }

  @Override
  public int blocks() {
    return keys.size();
  }

  @Override
  public BlockKey key(int index) {
    return keys.get(index);
  }

  @Override
  public int length(int index) {
    return lengths[index];
  }

  /** Downloads the block; a miss if it is gone or its length is no longer the one pinned. */
  @Override
  public GetStatus getInto(int index, ByteBuffer dst) {
    int start = dst.position();
    ByteBuffer window = dst.duplicate().limit(start + lengths[index]);
    if (download.apply(keys.get(index), window) != GetStatus.HIT
        || window.position() != window.limit()) {
      return GetStatus.MISS;
    }
    dst.position(window.position());
    return GetStatus.HIT;
  }

  @Override
  public boolean read(int index, Consumer<ByteBuffer> reader) {
    ByteBuffer copy = ByteBuffer.allocate(lengths[index]);
    if (getInto(index, copy) != GetStatus.HIT) {
      return false;
    }
    reader.accept(copy.flip().asReadOnlyBuffer());
    return true;
  }

  @Override
  public void release() {}
}
