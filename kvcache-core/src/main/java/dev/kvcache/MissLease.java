package dev.kvcache;

import java.nio.ByteBuffer;

/** The lease standing for a miss; it holds nothing and may be closed any number of times. */
final class MissLease implements BlockLease {
  private final BlockKey key;

  MissLease(BlockKey key) {
    this.key = key;
  }

  @Override
  public GetStatus status() {
    return GetStatus.MISS;
  }

  @Override
  public BlockKey key() {
    return key;
  }

  @Override
  public int length() {
    return 0;
  }

  @Override
  public ByteBuffer bytes() {
    throw new IllegalStateException("block " + key + " is not cached: check status() first");
  }

  @Override
  public void close() {}

  @Override
  public String toString() {
    return "MissLease[" + key + "]";
  }
}
