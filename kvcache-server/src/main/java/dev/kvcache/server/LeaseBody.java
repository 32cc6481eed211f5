package dev.kvcache.server;

import dev.kvcache.BlockLease;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;

/**
 * A response body that is the leased block itself: Netty writes the cache's memory to the socket
 * with no copy onto the heap, and the lease is closed only when Netty releases the body, after the
 * last byte is written or the stream is reset. Until then the block cannot be freed or reused.
 */
final class LeaseBody extends CompositeByteBuf {

  private final BlockLease lease;

  LeaseBody(BlockLease lease) {
    super(ByteBufAllocator.DEFAULT, true, 1, Unpooled.wrappedBuffer(lease.bytes()));
    this.lease = lease;
  }

  @Override
  protected void deallocate() {
    try {
      super.deallocate();
    } finally {
      lease.close();
    }
  }
}
