package dev.kvcache.spi;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.PrefixPin;
import dev.kvcache.SharedMemorySlice;
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
 * The {@link PrefixPin} of every tier: it holds a tier's {@link PinnedBlocks} until closed or until
 * its timeout passes, whichever comes first, so an engine that never comes back cannot pin memory
 * for ever. A read under way when the timeout passes finishes first; reads after it report {@link
 * GetStatus#MISS}. Thread-safe; closing twice does nothing.
 */
public final class PinnedPrefix implements PrefixPin {

  private static final ScheduledExecutorService EXPIRY = expiryThread();

  private final PinnedBlocks blocks;
  private final ReadWriteLock lock = new ReentrantReadWriteLock();
  private final ScheduledFuture<?> expiry;
  private boolean released; // guarded by lock
  private boolean blocksReleased; // guarded by lock
  /** Open leases {@link #share} handed out: the blocks are let go of once they are closed too. */
  private final AtomicInteger shares = new AtomicInteger();

  private PinnedPrefix(PinnedBlocks blocks, Duration timeout) {
    this.blocks = blocks;
    this.expiry = blocks.blocks() == 0
        ? null
        : EXPIRY.schedule(this::release, timeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  /**
   * Pins {@code leases}, all hits, until closed or until {@code timeout} passes: the pin of a tier
   * whose blocks are held by the leases its {@code get} returns.
   *
   * @throws IllegalArgumentException if {@code timeout} is not positive
   */
  public static PrefixPin of(List<BlockLease> leases, Duration timeout) {
    return new PinnedPrefix(new Leases(leases), requirePositive(timeout));
  }

  /**
   * A pin over blocks a tier holds in its own way, until closed or until {@code timeout} passes:
   * for tier implementations whose {@link KvCache#pinPrefix} does not hold local leases.
   *
   * @throws IllegalArgumentException if {@code timeout} is not positive
   */
  public static PrefixPin over(PinnedBlocks blocks, Duration timeout) {
    Objects.requireNonNull(blocks, "blocks");
    return new PinnedPrefix(blocks, requirePositive(timeout));
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

  @Override
  public int blocks() {
    return blocks.blocks();
  }

  @Override
  public BlockKey key(int index) {
    Objects.checkIndex(index, blocks.blocks());
    return blocks.key(index);
  }

  @Override
  public int length(int index) {
    Objects.checkIndex(index, blocks.blocks());
    return blocks.length(index);
  }

  @Override
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

  @Override
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

  @Override
  public Optional<SharedMemorySlice> sharedMemory(int index) {
    Objects.checkIndex(index, blocks.blocks());
    lock.readLock().lock();
    try {
      return released ? Optional.empty() : blocks.sharedMemory(index);
    } finally {
      lock.readLock().unlock();
    }
  }

  @Override
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

  @Override
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
