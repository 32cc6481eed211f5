package dev.kvcache.spi;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;

/**
 * A lease that holds a pin on a block's bytes, for tier implementations: it answers {@link
 * GetStatus#HIT}, refuses {@link #bytes()} once closed, and releases its pin exactly once, however
 * many threads close it.
 */
public abstract class PinnedLease implements BlockLease {

  private static final VarHandle CLOSED;

  static {
    try {
      CLOSED = MethodHandles.lookup().findVarHandle(PinnedLease.class, "closed", boolean.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final BlockKey key;

  @SuppressWarnings("unused") // accessed through CLOSED
  private volatile boolean closed;

  protected PinnedLease(BlockKey key) {
    this.key = key;
  }

  /** A new read-only view of the pinned bytes, position 0 and limit {@link #length()}. */
  protected abstract ByteBuffer view();

  /** Releases the pin; called once, by the first {@link #close()}. */
  protected abstract void release();

  @Override
  public final GetStatus status() {
    return GetStatus.HIT;
  }

  @Override
  public final BlockKey key() {
    return key;
  }

  @Override
  public final ByteBuffer bytes() {
    if (closed) {
      throw new IllegalStateException("lease on block " + key + " is closed");
    }
    return view();
  }

  @Override
  public final void close() {
    if (!CLOSED.compareAndSet(this, false, true)) {
      throw new IllegalStateException("lease on block " + key + " was already closed");
    }
    release();
  }

  @Override
  public String toString() {
    return getClass().getSimpleName() + "[" + key + ", " + length() + " bytes"
        + (closed ? ", closed]" : "]");
  }
}
