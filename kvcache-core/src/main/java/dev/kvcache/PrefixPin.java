package dev.kvcache;

import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;

/**
 * The leading blocks of a prompt found in the cache, held against eviction until the engine has
 * loaded them: what {@link KvCache#pinPrefix} returns, so that the engine's lookup and its loads
 * see the same blocks.
 *
 * <pre>{@code
 * try (PrefixPin pin = cache.pinPrefix(keys, Duration.ofSeconds(5))) {
 *   for (int i = 0; i < pin.blocks(); i++) {
 *     if (pin.getInto(i, gpuStaging[i]) != GetStatus.HIT) {
 *       break; // the pin expired: prefill from block i
 *     }
 *   }
 * }
 * }</pre>
 *
 * <p>The pin lets go of its blocks when closed or when its timeout passes, whichever comes first,
 * so an engine that never comes back cannot pin memory for ever. A read under way when the timeout
 * passes finishes first; reads after it report {@link GetStatus#MISS}. Thread-safe; closing twice
 * does nothing.
 */
public final class PrefixPin implements AutoCloseable {

  private static final ScheduledExecutorService EXPIRY = expiryThread();

  private final List<BlockLease> leases;
  private final ReadWriteLock lock = new ReentrantReadWriteLock();
  private final ScheduledFuture<?> expiry;
  private boolean released; // guarded by lock

  private PrefixPin(List<BlockLease> leases, Duration timeout) {
    this.leases = List.copyOf(leases);
    this.expiry = this.leases.isEmpty()
        ? null
        : EXPIRY.schedule(this::release, timeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  /** Pins {@code leases}, all hits, until closed or until {@code timeout} (positive) passes. */
  static PrefixPin of(List<BlockLease> leases, Duration timeout) {
    return new PrefixPin(leases, timeout);
  }

  /** How many leading blocks were found and pinned. */
  public int blocks() {
    return leases.size();
  }

  /** The key of pinned block {@code index}. */
  public BlockKey key(int index) {
    return leases.get(index).key();
  }

  /** The length in bytes of pinned block {@code index}. */
  public int length(int index) {
    return leases.get(index).length();
  }

  /**
   * Copies pinned block {@code index} into {@code dst} at its position, which advances by the
   * block's length.
   *
   * @return {@link GetStatus#HIT}; {@link GetStatus#BUFFER_TOO_SMALL} with {@code dst} unchanged;
   *     or {@link GetStatus#MISS} if the pin was closed or expired
   * @throws IndexOutOfBoundsException if {@code index} is not below {@link #blocks()}
   * @throws ReadOnlyBufferException if {@code dst} is read-only
   */
  public GetStatus getInto(int index, ByteBuffer dst) {
    Objects.checkIndex(index, leases.size());
    Objects.requireNonNull(dst, "dst");
    if (dst.isReadOnly()) {
      throw new ReadOnlyBufferException();
    }
    lock.readLock().lock();
    try {
      if (released) {
        return GetStatus.MISS;
      }
      BlockLease lease = leases.get(index);
      if (dst.remaining() < lease.length()) {
        return GetStatus.BUFFER_TOO_SMALL;
      }
      dst.put(lease.bytes());
      return GetStatus.HIT;
    } finally {
      lock.readLock().unlock();
    }
  }

  /**
   * Hands pinned block {@code index} to {@code reader} as a read-only view, without copying. The
   * view is valid only inside the call.
   *
   * @return false, without calling the reader, if the pin was closed or expired
   * @throws IndexOutOfBoundsException if {@code index} is not below {@link #blocks()}
   */
  public boolean read(int index, Consumer<ByteBuffer> reader) {
    Objects.checkIndex(index, leases.size());
    Objects.requireNonNull(reader, "reader");
    lock.readLock().lock();
    try {
      if (released) {
        return false;
      }
      reader.accept(leases.get(index).bytes());
      return true;
    } finally {
      lock.readLock().unlock();
    }
  }

  /** Whether the pin has let go of its blocks, by {@link #close()} or by its timeout. */
  public boolean isReleased() {
    lock.readLock().lock();
    try {
      return released;
    } finally {
      lock.readLock().unlock();
    }
  }

  /** Lets go of the blocks; waits for reads under way. Closing twice does nothing. */
  @Override
  public void close() {
    if (expiry != null) {
      expiry.cancel(false);
    }
    release();
  }

  private void release() {
    lock.writeLock().lock();
    try {
      if (released) {
        return;
      }
      released = true;
      for (BlockLease lease : leases) {
        lease.close();
      }
    } finally {
      lock.writeLock().unlock();
    }
  }

  private static ScheduledExecutorService expiryThread() {
    ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "kvcache-pin-expiry");
      t.setDaemon(true);
      return t;
    });
    executor.setRemoveOnCancelPolicy(true);
    return executor;
  }
}
