package dev.kvcache.tiered;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.BlockWriter;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.ram.RamTier;
import dev.kvcache.spi.AbstractBlockWriter;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierCounters;
import java.nio.ByteBuffer;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * The writes of a {@link TieredCache}: puts and writers, into RAM or, for a block RAM cannot take,
 * into the lower tier, and their commits, which take the key's stripe lock and the {@link
 * PutPolicy}'s steps in one order (the contracts are {@link TieredCache}'s); and the copies queued
 * again while the lower tier's writes fail.
 */
final class TieredWrites {

  private final RamTier ram;
  private final Tier lower;
  private final SpillQueue spills;
  private final RoomInRam room;
  private final CopyCoherence copies;
  private final KeyStripes stripes;
  private final PutPolicy policy;
  private final TierCounters counters;
  private final BooleanSupplier closed;
  private final LongAdder notDurablePuts = new LongAdder();

  TieredWrites(RamTier ram, Tier lower, SpillQueue spills, RoomInRam room, CopyCoherence copies,
      PutPolicy policy, TierCounters counters, BooleanSupplier closed) {
    this.ram = ram;
    this.lower = lower;
    this.spills = spills;
    this.room = room;
    this.copies = copies;
    this.stripes = copies.stripes();
    this.policy = policy;
    this.counters = counters;
    this.closed = closed;
  }

  /** Puts refused as {@link PutStatus#REJECTED_NOT_DURABLE}. */
  long notDurablePuts() {
    return notDurablePuts.sum();
  }

  /** As {@link TieredCache#put}. */
  PutStatus store(BlockKey key, ByteBuffer src) {
    BlockWriter inRam = reserveInRam(key, src.remaining());
    if (inRam == null) {
      return commit(key, false, () -> lower.put(key, src), null);
    }
    try (inRam) {
      inRam.write(src.duplicate());
      return commit(key, true, inRam::commit, null);
    }
  }

  /** As {@link TieredCache#writer}. */
  BlockWriter open(BlockKey key, int length) {
    BlockWriter inRam = reserveInRam(key, length);
    BlockWriter inner = inRam != null ? inRam : lower.writer(key, length);
    if (inner.rejection().isPresent()) {
      counters.rejection();
      return inner;
    }
    return new TieredWriter(key, inner, inRam != null);
  }

  /** As {@link TieredCache#tryWriter}, for a block the cache takes. */
  Optional<BlockWriter> tryOpen(BlockKey key, int length) {
    if (length > ram.maxBlockBytes() || !spills.hasRoom(length)
        || policy.commitsWait() || commitMayWait(key, length)) {
      return Optional.empty();
    }
    if (!copies.dropOldCopy(key, false)) {
      return Optional.empty(); // its stripe is busy, or a write of the key's old copy is under way
    }
    Optional<BlockWriter> inRam = ram.tryWriter(key, length); // a bounded cost (RamTier)
    if (inRam.isEmpty() || inRam.get().rejection().isPresent()) {
      inRam.ifPresent(BlockWriter::close);
      return Optional.empty();
    }
    return Optional.of(new TieredWriter(key, inRam.get(), true));
  }

  /**
   * Room in RAM for a block about to be put, or null if it goes to the lower tier: it is larger
   * than RAM's largest, or RAM is pinned full by leases. The key's copy leaves RAM and the spill
   * queue first, so that room is not spent on bytes about to be replaced.
   */
  private BlockWriter reserveInRam(BlockKey key, int length) {
    boolean fits = length <= ram.maxBlockBytes();
    if (fits) {
      room.awaitSpillRoom(length);
    }
    copies.dropOldCopy(key, true);
    if (!fits) {
      return null;
    }
    BlockWriter writer = room.open(key, length);
    return writer.rejection().isPresent() ? null : writer;
  }

  /**
   * Publishes a written block: the key's other copies leave every tier (the old copy leaves RAM
   * without an eviction, so every spill of this key from now on carries the new bytes; a spill of
   * the old one is cancelled or waited out), then the tier written to stores the new one. A block
   * stored in RAM is then copied down as the {@link Durability} says.
   *
   * @param place where a write-behind copy goes in the spill queue's order, reserved by a commit
   *     that must not wait; null to take the next one, and wait for the backlog before it
   */
  private PutStatus commit(BlockKey key, boolean inRam, Supplier<PutStatus> store,
      SpillOrder.Place place) {
    int stripe = KeyStripes.of(key);
    PutStatus status;
    SpillEntry copy = null;
    SpillEntry evicted = null;
    ReentrantLock lock = stripes.lock(stripe);
    lock.lock();
    try {
      stripes.bump(stripe);
      copies.removeAbove(key);
      if (inRam) {
        lower.supersede(key);
        status = policy.refuses()
            ? PutStatus.REJECTED_NOT_DURABLE // the writer's room is freed when it is closed
            : store.get();
        if (status == PutStatus.STORED && policy.copiesDown()) {
          copy = copyInRam(key);
        }
        if (copy == null && (status == PutStatus.NOT_ADMITTED
            || (status == PutStatus.STORED && policy.storesThrough()))) {
          // RAM's policy passed it straight on to the lower tier (or dropped it)
          evicted = spills.find(key);
          if (status == PutStatus.NOT_ADMITTED && (evicted != null || lower.contains(key))) {
            status = PutStatus.STORED;
          }
        }
        if (copy != null) {
          policy.enlist(copy, place);
        }
      } else {
        status = store.get();
      }
      stripes.bump(stripe); // see promote(): also after the tiers changed
    } finally {
      lock.unlock();
    }
    if (inRam) {
      status = policy.settle(key, status, copy, evicted, place);
    }
    if (status == PutStatus.STORED || status == PutStatus.NOT_ADMITTED) {
      counters.put();
    } else {
      counters.rejection();
    }
    if (status == PutStatus.REJECTED_NOT_DURABLE) {
      notDurablePuts.increment();
    }
    return status;
  }

  /**
   * Queues a copy of a block whose copy failed, while writes to the lower tier fail: if it goes
   * through, the lower tier has recovered. Nothing if RAM no longer holds it or it is queued.
   */
  void retryCopy(BlockKey key) {
    ReentrantLock lock = stripes.lock(KeyStripes.of(key));
    lock.lock();
    try {
      if (closed.getAsBoolean() || spills.holds(key)) {
        return;
      }
      SpillEntry copy = copyInRam(key);
      if (copy != null) {
        spills.queueCopy(copy);
      }
    } finally {
      lock.unlock();
    }
  }

  /** A copy of the key's block has reached the lower tier ({@link CopyCoherence#copyStored}). */
  void copyStored(BlockKey key) {
    copies.copyStored(key);
  }

  /** A lease on the key's block in RAM, for a copy to the lower tier; null if RAM has none. */
  private SpillEntry copyInRam(BlockKey key) {
    BlockLease lease = ram.peek(key);
    if (lease.status() != GetStatus.HIT) {
      lease.close();
      return null;
    }
    return SpillEntry.copyOf(lease);
  }

  /** A block being written into the tier that will hold it. */
  private final class TieredWriter extends AbstractBlockWriter {
    private final BlockWriter inner;
    private final boolean inRam;
    /** The spill queue's place for its copy, reserved by {@link #tryCommit}; null otherwise. */
    private SpillOrder.Place place;

    TieredWriter(BlockKey key, BlockWriter inner, boolean inRam) {
      super(key, inner.length(), false); // the inner writer computes the checksum
      this.inner = inner;
      this.inRam = inRam;
    }

    @Override
    protected void copyIn(ByteBuffer src, int offset) {
      inner.write(src.duplicate()); // parts arrive in order: the inner writer is at offset
    }

    @Override
    public OptionalInt crc32c() {
      return inner.crc32c();
    }

    @Override
    public boolean writesMayWait() {
      return inner.writesMayWait();
    }

    /**
     * Commits under the key's stripe lock if it is free now (the lock of another key's put may be
     * held across the lower tier's write or delete), unless the commit may wait after all: a
     * write of the key's old copy to the lower tier started since the writer opened (RAM evicted
     * it), or landed there, or the write-behind backlog is past half a window. A write-behind
     * copy takes the place in the spill queue reserved while the backlog was under half, so the
     * commit does not wait for the spill threads however many puts come in between.
     */
    @Override
    public Optional<PutStatus> tryCommit() {
      ReentrantLock lock = stripes.lock(KeyStripes.of(key()));
      if (!lock.tryLock()) {
        return Optional.empty();
      }
      try {
        if (commitMayWait() || !copies.dropOldCopy(key(), false) || lower.contains(key())) {
          return Optional.empty(); // the last: a spill of the old copy landed since the check
        }
        if (policy.reservesPlace()) {
          place = spills.reserve(length());
          if (place == null) {
            return Optional.empty();
          }
        }
        return Optional.of(commit());
      } finally {
        if (place != null) {
          spills.release(place); // if the commit never took it
        }
        lock.unlock();
      }
    }

    @Override
    public boolean commitMayWait() {
      return !inRam || policy.commitsWait()
          || TieredWrites.this.commitMayWait(key(), length());
    }

    @Override
    protected PutStatus publish() {
      try {
        return TieredWrites.this.commit(key(), inRam, inner::commit, place);
      } finally {
        inner.close(); // nothing more after a commit; frees the room if the commit never ran
      }
    }

    @Override
    protected void discard() {
      inner.close();
    }
  }

  /**
   * Whether a commit of the key into RAM may wait now: a copy of the key is on its way to the
   * lower tier (cancelling it waits out a write under way), the lower tier holds the key (the
   * commit deletes it there: a journal entry, a force under a strict sync policy), or, written
   * behind, the blocks behind it fill half the window, in blocks or in bytes with its own {@code
   * length}, so that the commit would wait for the spill threads unless more than half a window
   * of puts came in between.
   */
  private boolean commitMayWait(BlockKey key, int length) {
    return spills.holds(key) || lower.contains(key)
        || policy.backlogMakesWait(length);
  }
}
