package dev.kvcache;

import dev.kvcache.spi.PinnedBlocks;
import dev.kvcache.spi.PinnedLease;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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

  private final PinnedBlocks blocks;
  private final ReadWriteLock lock = new ReentrantReadWriteLock();
  private final ScheduledFuture<?> expiry;
  private boolean released; // guarded by lock
  private boolean blocksReleased; // guarded by lock
  /** Open leases {@link #share} handed out: the blocks are let go of once they are closed too. */
  private final AtomicInteger shares = new AtomicInteger();

  private PrefixPin(PinnedBlocks blocks, Duration timeout) {
    this.blocks = blocks;
    this.expiry = blocks.blocks() == 0
        ? null
        : EXPIRY.schedule(this::release, timeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  /** Pins {@code leases}, all hits, until closed or until {@code timeout} (positive) passes. */
  static PrefixPin of(List<BlockLease> leases, Duration timeout) {
    return new PrefixPin(new Leases(leases), timeout);
  }

  /**
   * A pin over blocks a tier holds in its own way, until closed or until {@code timeout} passes:
   * for tier implementations whose {@link KvCache#pinPrefix} does not hold local leases.
   *
   * @throws IllegalArgumentException if {@code timeout} is not positive
   */
  public static PrefixPin over(PinnedBlocks blocks, Duration timeout) {
    Objects.requireNonNull(blocks, "blocks");
    return new PrefixPin(blocks, requirePositive(timeout));
  }

  /**
   * Checks a pin's timeout, for implementations of {@link KvCache#pinPrefix} that must refuse a
   * bad one before they pin anything.
   *
   * @return {@code timeout}
   * @throws IllegalArgumentException if {@code timeout} is not positive
   */
  public static Duration requirePositive(Duration timeout) {
    Objects.requireNonNull(timeout, "timeout");
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("the pin timeout must be positive, got " + timeout);
    }
    return timeout;
  }

  /** How many leading blocks were found and pinned. */
  public int blocks() {
    return blocks.blocks();
  }

  /** The key of pinned block {@code index}. */
  public BlockKey key(int index) {
    Objects.checkIndex(index, blocks.blocks());
    return blocks.key(index);
  }

  /** The length in bytes of pinned block {@code index}. */
  public int length(int index) {
    Objects.checkIndex(index, blocks.blocks());
    return blocks.length(index);
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
    Objects.checkIndex(index, blocks.blocks());
    Objects.requireNonNull(dst, "dst");
    if (dst.isReadOnly()) {
      throw new ReadOnlyBufferException();
    }
    lock.readLock().lock();
    try {
      if (released) {
        return GetStatus.MISS;
      }
      if (dst.remaining() < blocks.length(index)) {
        return GetStatus.BUFFER_TOO_SMALL;
      }
      return blocks.getInto(index, dst);
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
    Objects.checkIndex(index, blocks.blocks());
    Objects.requireNonNull(reader, "reader");
    lock.readLock().lock();
    try {
      if (released) {
        return false;
      }
      return blocks.read(index, reader);
    } finally {
      lock.readLock().unlock();
    }
  }

  /**
   * Where pinned block {@code index} lies in shared memory that other processes on this host may
   * map and copy from while the pin holds it (a RAM tier configured with {@link
   * dev.kvcache.ram.RamTierConfig#withSharedMemory}); empty if it lies elsewhere, or once the pin
   * was closed or expired. A reader must finish copying before it closes the pin.
   *
   * @throws IndexOutOfBoundsException if {@code index} is not below {@link #blocks()}
   */
  public Optional<SharedMemorySlice> sharedMemory(int index) {
    Objects.checkIndex(index, blocks.blocks());
    lock.readLock().lock();
    try {
      return released ? Optional.empty() : blocks.sharedMemory(index);
    } finally {
      lock.readLock().unlock();
    }
  }

  /**
   * A lease on pinned block {@code index} that keeps its bytes, without a copy, until it is closed,
   * even after the pin is closed or expires: for a reader that hands the bytes on later, as a
   * server does when it writes them to a socket. The pin lets go of its blocks once it and every
   * lease it shared are closed.
   *
   * @return empty if the pin was closed or expired, or if the block is not held by a lease of this
   *     process (a remote tier's block: read it with {@link #getInto} or {@link #read})
   * @throws IndexOutOfBoundsException if {@code index} is not below {@link #blocks()}
   */
  public Optional<BlockLease> share(int index) {
    Objects.checkIndex(index, blocks.blocks());
    lock.readLock().lock();
    try {
      if (released) {
        return Optional.empty();
      }
      Optional<BlockLease> lease = blocks.lease(index);
      if (lease.isEmpty()) {
        return lease;
      }
      shares.incrementAndGet();
      return Optional.of(new SharedLease(lease.get()));
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
      releaseBlocksIfUnshared();
    } finally {
      lock.writeLock().unlock();
    }
  }

  /** Lets go of the blocks once the pin is released and no shared lease is open; under the lock. */
  private void releaseBlocksIfUnshared() {
    if (released && !blocksReleased && shares.get() == 0) {
      blocksReleased = true;
      blocks.release();
    }
  }

  private void unshare() {
    if (shares.decrementAndGet() == 0) {
      lock.writeLock().lock();
      try {
        releaseBlocksIfUnshared();
      } finally {
        lock.writeLock().unlock();
      }
    }
  }

  /**
   * A lease {@link #share} handed out over the pinned block's own lease, which the pin closes once
   * it and every shared lease are closed.
   */
  private final class SharedLease extends PinnedLease {
    private final BlockLease lease;

    SharedLease(BlockLease lease) {
      super(lease.key());
      this.lease = lease;
    }

    @Override
    protected ByteBuffer view() {
      return lease.bytes();
    }

    @Override
    public int length() {
      return lease.length();
    }

    @Override
    public OptionalInt crc32c() {
      return lease.crc32c();
    }

    @Override
    public Optional<SharedMemorySlice> sharedMemory() {
      return lease.sharedMemory();
    }

    @Override
    protected void release() {
      unshare();
    }
  }

  /** Blocks held by the leases a tier's {@code get} returned. */
  private static final class Leases implements PinnedBlocks {
    private final List<BlockLease> leases;

    Leases(List<BlockLease> leases) {
      this.leases = List.copyOf(leases);
    }

    @Override
    public int blocks() {
      return leases.size();
    }

    @Override
    public BlockKey key(int index) {
      return leases.get(index).key();
    }

    @Override
    public int length(int index) {
      return leases.get(index).length();
    }

    @Override
    public GetStatus getInto(int index, ByteBuffer dst) {
      dst.put(leases.get(index).bytes());
      return GetStatus.HIT;
    }

    @Override
    public boolean read(int index, Consumer<ByteBuffer> reader) {
      reader.accept(leases.get(index).bytes());
      return true;
    }

    @Override
    public Optional<SharedMemorySlice> sharedMemory(int index) {
      return leases.get(index).sharedMemory();
    }

    @Override
    public Optional<BlockLease> lease(int index) {
      return Optional.of(leases.get(index));
    }

    @Override
    public void release() {
      leases.forEach(BlockLease::close);
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
