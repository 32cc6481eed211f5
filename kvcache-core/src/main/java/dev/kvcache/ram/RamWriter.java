package dev.kvcache.ram;

import dev.kvcache.BlockKey;
import dev.kvcache.PutStatus;
import dev.kvcache.internal.memory.OffHeapBlock;
import dev.kvcache.spi.AbstractBlockWriter;
import java.nio.ByteBuffer;

/**
 * A block being written into the memory {@link RamTier} reserved for it, not yet in the index: its
 * bytes are copied straight in, their CRC32C computed as they come, and the commit publishes it.
 */
final class RamWriter extends AbstractBlockWriter {

  private final RamTier tier;
  private final OffHeapBlock block;

  RamWriter(RamTier tier, BlockKey key, OffHeapBlock block) {
    super(key, block.length());
    this.tier = tier;
    this.block = block;
  }

  @Override
  protected void copyIn(ByteBuffer src, int offset) {
    block.copyFrom(src, offset);
  }

  @Override
  public boolean writesMayWait() {
    return false; // a copy into memory
  }

  @Override
  protected PutStatus publish() {
    crc32c().ifPresent(block::checksum);
    return tier.publish(key(), block);
  }

  @Override
  protected void discard() {
    block.release();
    block.releaseOwner();
  }
}
