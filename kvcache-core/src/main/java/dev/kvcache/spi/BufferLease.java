package dev.kvcache.spi;

import dev.kvcache.BlockKey;
import java.nio.ByteBuffer;
import java.util.OptionalInt;

/**
 * A block read into a buffer of its own (from a server, from an object store): nothing to unpin
 * but the tier's count of open leases, for tier implementations.
 */
public final class BufferLease extends PinnedLease {

  private final ByteBuffer block;
  private final OptionalInt crc32c;
  private final TierCounters counters;

  /**
   * A lease on {@code block}'s bytes, position to limit, which the lease now owns; counted open in
   * {@code counters} until closed.
   *
   * @param crc32c the checksum the bytes were checked against, if any
   */
  public BufferLease(BlockKey key, ByteBuffer block, OptionalInt crc32c, TierCounters counters) {
    super(key);
    this.block = block.asReadOnlyBuffer();
    this.crc32c = crc32c;
    this.counters = counters;
    counters.leaseOpened();
  }

  @Override
  public int length() {
    return block.remaining();
  }

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
