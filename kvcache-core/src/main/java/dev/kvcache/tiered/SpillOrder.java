package dev.kvcache.tiered;

import java.util.Map;
import java.util.TreeMap;

/**
 * The order in which blocks were registered with the {@link SpillQueue}: each block's place, the
 * bytes registered before it, and which places are not written yet. It bounds what {@link
 * Durability#WRITE_BEHIND} puts leave unwritten: the blocks from the oldest unwritten one up to a
 * put's own, counted whether or not the ones in between are written, so that the bound holds
 * however the spill threads finish, and each put waits only for the blocks before its own.
 */
final class SpillOrder {

  private final int maxBlocks;
  private final long maxBytes;
  /** The places not written yet, each with the bytes registered before it. */
  private final TreeMap<Long, Long> unwritten = new TreeMap<>();
  private long registeredBlocks;
  private long registeredBytes;

  /**
   * An order that bounds what may be unwritten to {@code maxBlocks} blocks (the write-behind
   * window) holding at most {@code maxBytes} (the queue's byte bound).
   */
  SpillOrder(int maxBlocks, long maxBytes) {
    this.maxBlocks = maxBlocks;
    this.maxBytes = maxBytes;
  }

  /** Gives {@code entry} the next place, unless its put {@link #reserve reserved} one. */
  synchronized void register(SpillEntry entry) {
    if (entry.sequence() < 0) {
      entry.place(next(entry.size()), registeredBytes - entry.size());
    }
  }

  /** Takes the next place for a block of {@code length} bytes: its sequence number. */
  private long next(int length) {
    long place = registeredBlocks++;
    unwritten.put(place, registeredBytes);
    registeredBytes += length;
    return place;
  }

  /** The entry's place is written (or its block dropped): the blocks after it wait no more for it. */
  synchronized void written(SpillEntry entry) {
    unwritten.remove(entry.sequence());
  }

  /**
   * Whether a block of {@code length} bytes registered now would be at least half way to either
   * bound of {@link #over}: the blocks registered since the oldest one not yet written, or their
   * bytes with its own.
   */
  synchronized boolean pastHalf(int length) {
    Map.Entry<Long, Long> first = unwritten.firstEntry();
    if (first == null) {
      return false;
    }
    long blocks = registeredBlocks - first.getKey();
    long bytes = registeredBytes - first.getValue() + length;
    return blocks * 2 >= maxBlocks || bytes * 2 > maxBytes;
  }

  /**
   * A place for a block of {@code length} bytes, taken now if the order is not {@link #pastHalf}
   * (null otherwise), for a copy that its put registers later ({@link #take}). Waiting {@link
   * #over} up to it then cannot happen, however many blocks register meanwhile: the oldest
   * unwritten place only moves on.
   */
  synchronized Place reserve(int length) {
    if (pastHalf(length)) {
      return null;
    }
    long bytesBefore = registeredBytes;
    return new Place(next(length), bytesBefore, length);
  }

  /** Puts {@code copy} in {@code place}, which must be for its length and not yet taken. */
  synchronized void take(Place place, SpillEntry copy) {
    if (place.taken || place.length != copy.size()) {
      throw new IllegalStateException("a place for " + place.length + " bytes, "
          + (place.taken ? "already taken" : "for a copy of " + copy.size()));
    }
    place.taken = true;
    copy.place(place.sequence, place.bytesBefore);
  }

  /**
   * Gives back a place no copy took, which nothing can take afterwards.
   *
   * @return whether it was given back now (false if a copy took it, or it was given back before)
   */
  synchronized boolean giveBack(Place place) {
    if (place.taken) {
      return false;
    }
    place.taken = true;
    unwritten.remove(place.sequence);
    return true;
  }

  /**
   * Where the blocks up to {@code mine} end, or up to the last registered if null: {@code {last
   * place, bytes up to its end}}.
   */
  synchronized long[] upTo(SpillEntry mine) {
    return mine != null
        ? new long[] {mine.sequence(), mine.bytesBefore() + mine.size()}
        : new long[] {registeredBlocks - 1, registeredBytes};
  }

  /**
   * Whether the blocks from the oldest unwritten one up to place {@code last}, which end at {@code
   * end} bytes, are more than {@code maxBlocks}, or more than one holding more than the queue's
   * bytes. Written blocks among them count too: the bound holds however the threads finish.
   */
  synchronized boolean over(long last, long end) {
    Map.Entry<Long, Long> first = unwritten.firstEntry();
    long oldest = first != null ? first.getKey() : registeredBlocks;
    long bytesBeforeOldest = first != null ? first.getValue() : registeredBytes;
    long blocks = last + 1 - oldest;
    return blocks > maxBlocks || (end - bytesBeforeOldest > maxBytes && blocks > 1);
  }

  /** A place {@link #reserve reserved} in the order, for a block of {@code length} bytes. */
  static final class Place {
    private final long sequence;
    private final long bytesBefore;
    private final int length;
    /** Whether a copy took it or it was given back. Guarded by the order. */
    private boolean taken;

    private Place(long sequence, long bytesBefore, int length) {
      this.sequence = sequence;
      this.bytesBefore = bytesBefore;
      this.length = length;
    }
  }
}
