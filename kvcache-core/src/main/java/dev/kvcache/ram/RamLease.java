package dev.kvcache.ram;

import dev.kvcache.BlockKey;
import dev.kvcache.SharedMemorySlice;
import dev.kvcache.internal.memory.OffHeapBlock;
import dev.kvcache.spi.PinnedLease;
import java.nio.ByteBuffer;
import java.util.Optional;
import java.util.OptionalInt;

/** A lease on a block in the RAM tier: one reference on its {@link OffHeapBlock}. */
final class RamLease extends PinnedLease {

  private final RamTier tier;
  private final OffHeapBlock block;

  /** Takes over one reference the caller already holds on {@code block}. */
  RamLease(RamTier tier, BlockKey key, OffHeapBlock block) {
    super(key);
    this.tier = tier;
    this.block = block;
  }

  @Override
  public int length() {
    return block.length();
  }

  @Override
  public OptionalInt crc32c() {
    return block.checksum();
  }

  @Override
  public Optional<SharedMemorySlice> sharedMemory() {
    return block.sharedMemory();
  }

  @Override
  protected ByteBuffer view() {
    return block.readOnlyView();
  }

  @Override
  protected void release() {
    block.release();
    tier.leaseClosed();
  }
}
