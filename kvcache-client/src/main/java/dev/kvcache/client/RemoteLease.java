package dev.kvcache.client;

import dev.kvcache.BlockKey;
import dev.kvcache.spi.PinnedLease;
import dev.kvcache.spi.TierCounters;
import java.nio.ByteBuffer;

/** A block fetched from a server into a buffer of its own; nothing to unpin but the count. */
final class RemoteLease extends PinnedLease {

  private final ByteBuffer block;
  private final TierCounters counters;

  RemoteLease(BlockKey key, ByteBuffer block, TierCounters counters) {
    super(key);
    this.block = block;
    this.counters = counters;
    counters.leaseOpened();
  }

  @Override
  public int length() {
    return block.remaining();
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
