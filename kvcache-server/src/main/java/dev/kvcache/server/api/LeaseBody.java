package dev.kvcache.server.api;

import dev.kvcache.BlockLease;
import io.micrometer.core.instrument.Timer;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A response body that is the leased blocks themselves, back to back: Netty writes the cache's
 * memory to the socket with no copy onto the heap, and the leases are closed only when Netty
 * releases the body, after the last byte is written or the stream is reset. Until then the blocks
 * cannot be freed or reused. That release also ends the body's time on its timer: the time the
 * server took to send the blocks, the body included.
 */
final class LeaseBody extends CompositeByteBuf {

  private final List<BlockLease> leases;
  private final Timer timer;
  private final long startNanos = System.nanoTime();

  LeaseBody(BlockLease lease, Timer timer) {
    this(List.of(lease), timer);
  }

  /**
   * The blocks of {@code leases}, which this body now owns, in order; none makes it empty. The
   * time from now until Netty releases the body goes to {@code timer}, if not null.
   */
  LeaseBody(List<BlockLease> leases, Timer timer) {
    super(ByteBufAllocator.DEFAULT, true, Math.max(1, leases.size()), wrap(leases));
    this.leases = leases;
    this.timer = timer;
  }

  private static List<ByteBuf> wrap(List<BlockLease> leases) {
    List<ByteBuf> parts = new ArrayList<>(leases.size());
    for (BlockLease lease : leases) {
      parts.add(Unpooled.wrappedBuffer(lease.bytes()));
    }
    return parts;
  }

  @Override
  protected void deallocate() {
    try {
      super.deallocate();
    } finally {
      leases.forEach(BlockLease::close);
      if (timer != null) {
        timer.record(System.nanoTime() - startNanos, TimeUnit.NANOSECONDS);
      }
    }
  }
}
