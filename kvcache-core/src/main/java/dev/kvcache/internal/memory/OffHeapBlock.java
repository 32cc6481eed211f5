package dev.kvcache.internal.memory;

import dev.kvcache.SharedMemorySlice;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * One block's run of granules in an {@link Arena}, with the reference count that decides when the
 * run may be freed or moved.
 *
 * <h2>Reference counting</h2>
 *
 * {@code refs} counts the holders of the memory. The first reference belongs to the block's
 * <em>owner</em> (the cache index, while the block is findable), which gives it up with {@link
 * #releaseOwner()}; the others are transient: a writer while a put copies into the block, each open
 * lease, each copy out in progress. The run returns to the arena when the count reaches 0; after
 * that {@link #tryRetain()} fails forever, so a reader that loses the race with a delete sees a
 * miss, never reused memory.
 *
 * <p>Compaction may move a block only while the owner's reference is the only one: it swaps the
 * count from 1 to {@code MOVING}, checks that the owner still holds it (a count of 1 may also be a
 * lease that outlived the owner, whose buffer points at the old address), copies the bytes,
 * updates {@code startGranule} and stores 1 back. Readers and releasers that meet {@code MOVING}
 * wait for the move to finish; because the new offset is written before the count is restored (a
 * volatile write) and readers acquire with a compare-and-set, a reader that gets in always sees the
 * new offset. The owner clears {@code owned} before dropping its count, so a compaction that pins a
 * count of 1 produced by the owner's release always sees {@code owned == false}.
 */
public final class OffHeapBlock {

  private static final int MOVING = -1;
  private static final VarHandle REFS;
  private static final VarHandle EVICTED;
  private static final VarHandle OWNED;

  static {
    try {
      MethodHandles.Lookup lookup = MethodHandles.lookup();
      REFS = lookup.findVarHandle(OffHeapBlock.class, "refs", int.class);
      EVICTED = lookup.findVarHandle(OffHeapBlock.class, "evicted", boolean.class);
      OWNED = lookup.findVarHandle(OffHeapBlock.class, "owned", boolean.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final Arena arena;
  private final int length;
  /** Written only under the arena's lock, while no reader holds the block. */
  int startGranule;
  /** The CRC32C of the bytes, if its writer computed one, set once they are all written. */
  private OptionalInt checksum = OptionalInt.empty();

  @SuppressWarnings("unused") // accessed through REFS
  private volatile int refs;

  @SuppressWarnings("unused") // accessed through EVICTED
  private volatile boolean evicted;

  @SuppressWarnings("unused") // accessed through OWNED
  private volatile boolean owned;

  /** A block whose first reference is its owner's; {@code initialRefs} is at least 1. */
  OffHeapBlock(Arena arena, int startGranule, int length, int initialRefs) {
    if (initialRefs < 1) {
      throw new IllegalArgumentException("a new block needs its owner's reference, got " + initialRefs);
    }
    this.arena = arena;
    this.startGranule = startGranule;
    this.length = length;
    this.refs = initialRefs;
    this.owned = true;
  }

  /** The payload length in bytes. */
  public int length() {
    return length;
  }

  /** Bytes of the arena this block occupies: its length rounded up to whole granules. */
  /** The CRC32C of the block's bytes, as its writer computed it; empty if it computed none. */
  public OptionalInt checksum() {
    return checksum;
  }

  /** Records the CRC32C of the block's bytes, before the block is published. */
  public void checksum(int crc32c) {
    this.checksum = OptionalInt.of(crc32c);
  }

  public int allocatedBytes() {
    return Arena.granulesFor(length) << Arena.GRANULE_SHIFT;
  }

  /** The arena's memory; the block lies at {@link #offset()}. Valid while a reference is held. */
  public ByteBuffer memory() {
    return arena.memory;
  }

  /** The block's byte offset in {@link #memory()}. Stable while a reference is held. */
  public int offset() {
    return startGranule << Arena.GRANULE_SHIFT;
  }

  /**
   * Copies {@code src}'s remaining bytes into the block from byte {@code at} on, without moving
   * {@code src}'s position; the caller checked that they fit.
   */
  public void copyFrom(ByteBuffer src, int at) {
    arena.memory.put(offset() + at, src, src.position(), src.remaining());
  }

  /** Copies the block to {@code dst}'s position and advances it; the caller checked the room. */
  public void copyTo(ByteBuffer dst) {
    int pos = dst.position();
    dst.put(pos, arena.memory, offset(), length);
    dst.position(pos + length);
  }

  /**
   * Where the block lies in its arena's shared-memory file; empty for an arena of private memory.
   * Stable while a reference is held.
   */
  public Optional<SharedMemorySlice> sharedMemory() {
    return arena.file == null
        ? Optional.empty()
        : Optional.of(new SharedMemorySlice(arena.file, offset(), length, checksum));
  }

  /** A new read-only view of the block's bytes. */
  public ByteBuffer readOnlyView() {
    return arena.memory.slice(offset(), length).asReadOnlyBuffer();
  }

  /** Adds a reference unless the block was already freed. */
  public boolean tryRetain() {
    for (int spins = 0; ; spins++) {
      int r = (int) REFS.getVolatile(this);
      if (r == 0) {
        return false;
      }
      if (r == MOVING) {
        backOff(spins);
      } else if (REFS.compareAndSet(this, r, r + 1)) {
        return true;
      }
    }
  }

  /** What {@link #tryRetainUnlessMoving} did. */
  public enum Retained {
    /** A reference was added. */
    YES,
    /** None: the block was already freed. */
    FREED,
    /** None: compaction is moving the block; {@link #tryRetain} would wait for the move. */
    MOVING
  }

  /**
   * As {@link #tryRetain}, for a thread that must not wait: adds no reference while compaction
   * moves the block (a copy of up to the block's length), where {@link #tryRetain} waits.
   */
  public Retained tryRetainUnlessMoving() {
    while (true) {
      int r = (int) REFS.getVolatile(this);
      if (r == 0) {
        return Retained.FREED;
      }
      if (r == MOVING) {
        return Retained.MOVING;
      }
      if (REFS.compareAndSet(this, r, r + 1)) {
        return Retained.YES;
      }
    }
  }

  /** Drops a reference; the last one returns the memory to the arena. */
  public void release() {
    for (int spins = 0; ; spins++) {
      int r = (int) REFS.getVolatile(this);
      if (r == MOVING) {
        backOff(spins);
      } else if (r <= 0) {
        throw new IllegalStateException("block released more often than retained");
      } else if (REFS.compareAndSet(this, r, r - 1)) {
        if (r == 1) {
          arena.free(this);
        }
        return;
      }
    }
  }

  /**
   * Drops the owner's reference (the block left the index); the memory is freed now or when the
   * last transient holder releases.
   *
   * @throws IllegalStateException if the owner already released it
   */
  public void releaseOwner() {
    if (!OWNED.compareAndSet(this, true, false)) {
      throw new IllegalStateException("the owner's reference was already released");
    }
    release();
  }

  /** Marks the block as removed by the eviction policy. */
  public void markEvicted() {
    EVICTED.setVolatile(this, true);
  }

  public boolean isEvicted() {
    return (boolean) EVICTED.getVolatile(this);
  }

  /** Pins the block for a move if its owner is its only holder. */
  boolean tryPinForMove() {
    if (!REFS.compareAndSet(this, 1, MOVING)) {
      return false;
    }
    if (!(boolean) OWNED.getVolatile(this)) {
      REFS.setVolatile(this, 1); // a lease that outlived the owner: its buffer fixes the address
      return false;
    }
    return true;
  }

  void finishMove() {
    REFS.setVolatile(this, 1);
  }

  private static void backOff(int spins) {
    if (spins < 64) {
      Thread.onSpinWait();
    } else {
      Thread.yield();
    }
  }
}
