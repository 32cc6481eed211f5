package dev.kvcache.client;

import dev.kvcache.BlockKey;
import dev.kvcache.spi.PinnedLease;
import dev.kvcache.spi.TierCounters;
import java.nio.ByteBuffer;
import java.util.OptionalInt;

/** A block fetched from a server into a buffer of its own; nothing to unpin but the count. */
final class RemoteLease extends PinnedLease {

  private final ByteBuffer block;
  private final OptionalInt crc32c;
  private final TierCounters counters;

  RemoteLease(BlockKey key, ByteBuffer block, OptionalInt crc32c, TierCounters counters) {
    super(key);
    this.block = block;
    this.crc32c = crc32c;
    this.counters = counters;
    counters.leaseOpened();
  }

  @Override
  public int length() {
    return block.remaining();
  }

  /** The checksum the server sent with the block, which the block's bytes were checked against. */
  @Override
  public OptionalInt crc32c() {
    return crc32c;
  }

  @Override
  protected ByteBuffer view() {
    return block.duplicate();
  }

  @Override
  protected void release() {
    counters.leaseClosed();
  }
}
