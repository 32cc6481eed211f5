package dev.kvcache.s3;

import dev.kvcache.BlockKey;
import dev.kvcache.spi.PinnedLease;
import dev.kvcache.spi.TierCounters;
import java.nio.ByteBuffer;
import java.util.OptionalInt;

/** A block downloaded into a direct buffer of its own, checked against its CRC32C. */
final class S3Lease extends PinnedLease {

  private final ByteBuffer block;
  private final int crc32c;
  private final TierCounters counters;

  S3Lease(BlockKey key, ByteBuffer block, int crc32c, TierCounters counters) {
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
    return OptionalInt.of(crc32c);
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
