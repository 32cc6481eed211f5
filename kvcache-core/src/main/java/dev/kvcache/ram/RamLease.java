package dev.kvcache.ram;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.internal.memory.OffHeapBlock;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;

/** A lease on a block in the RAM tier: one reference on its {@link OffHeapBlock}. */
final class RamLease implements BlockLease {

  private static final VarHandle CLOSED;

  static {
    try {
      CLOSED = MethodHandles.lookup().findVarHandle(RamLease.class, "closed", boolean.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final RamTier tier;
  private final BlockKey key;
  private final OffHeapBlock block;

  @SuppressWarnings("unused") // accessed through CLOSED
  private volatile boolean closed;

  /** Takes over one reference the caller already holds on {@code block}. */
  RamLease(RamTier tier, BlockKey key, OffHeapBlock block) {
    this.tier = tier;
    this.key = key;
    this.block = block;
  }

  @Override
  public GetStatus status() {
    return GetStatus.HIT;
  }

  @Override
  public BlockKey key() {
    return key;
  }

  @Override
  public int length() {
    return block.length();
  }

  @Override
  public ByteBuffer bytes() {
    if (closed) {
      throw new IllegalStateException("lease on block " + key + " is closed");
    }
    return block.readOnlyView();
  }

  @Override
  public void close() {
    if (!tryClose()) {
      throw new IllegalStateException("lease on block " + key + " was already closed");
    }
  }

  /** Closes the lease unless it is closed already; returns whether this call closed it. */
  boolean tryClose() {
    if (!CLOSED.compareAndSet(this, false, true)) {
      return false;
    }
    block.release();
    tier.leaseClosed();
    return true;
  }

  @Override
  public String toString() {
    return "RamLease[" + key + ", " + block.length() + " bytes" + (closed ? ", closed]" : "]");
  }
}
