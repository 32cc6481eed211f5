package dev.kvcache.disk;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.disk.internal.Location;
import dev.kvcache.disk.internal.SuperBlock;
import dev.kvcache.spi.PinnedBlocks;
import dev.kvcache.spi.TierCounters;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The blocks of a disk tier's prefix pin: the place of each leading block's record, its
 * super-block pinned so that the record stays whatever happens to the key, read (and checked
 * against its checksum) only when the block is read. A lookup that pins a prefix on disk then
 * costs an index lookup per block, not a read of every byte; the load reads each block once. A
 * lease on a block, for a reader that hands its bytes on, is made when first asked for and kept
 * until the pin lets go. Each pinned block counts as an open lease of the tier, as a lease on it
 * would.
 */
final class DiskPin implements PinnedBlocks {

  private final RecordReads reads;
  private final TierCounters counters;
  private final List<BlockKey> keys;
  private final List<Location> places;
  private final List<SuperBlock> superBlocks;
  private final BlockLease[] leases;

  private DiskPin(RecordReads reads, TierCounters counters, List<BlockKey> keys,
      List<Location> places, List<SuperBlock> superBlocks) {
    this.reads = reads;
    this.counters = counters;
    this.keys = keys;
    this.places = places;
    this.superBlocks = superBlocks;
    this.leases = new BlockLease[keys.size()];
  }

  /**
   * Pins the records of the leading keys of {@code keys} that {@code index} holds, each counted
   * in {@code counters} as an open lease until the pin lets go.
   */
  static DiskPin pin(RecordReads reads, TierCounters counters, BlockIndex index,
      Map<Integer, SuperBlock> superBlocks, List<BlockKey> keys) {
    List<BlockKey> pinned = new ArrayList<>();
    List<Location> places = new ArrayList<>();
    List<SuperBlock> held = new ArrayList<>();
    for (BlockKey key : keys) {
      Location loc = index.get(key);
      SuperBlock sb = loc == null ? null : superBlocks.get(loc.superBlockId);
      if (sb == null || !sb.pin()) {
        break; // not stored, or its super-block dropped meanwhile
      }
      loc.hit();
      counters.leaseOpened();
      pinned.add(key);
      places.add(loc);
      held.add(sb);
    }
    return new DiskPin(reads, counters, List.copyOf(pinned), places, held);
  }

  @Override
  public int blocks() {
    return keys.size();
  }

  @Override
  public BlockKey key(int index) {
    return keys.get(index);
  }

  @Override
  public int length(int index) {
    return places.get(index).rawLength;
  }

  @Override
  public GetStatus getInto(int index, ByteBuffer dst) {
    return reads.readPinned(keys.get(index), places.get(index), superBlocks.get(index), dst);
  }

  @Override
  public boolean read(int index, Consumer<ByteBuffer> reader) {
    Optional<BlockLease> lease = lease(index);
    lease.ifPresent(l -> reader.accept(l.bytes()));
    return lease.isPresent();
  }

  /** A lease on the block, made (and checked) on the first call; empty if the record is damaged. */
  @Override
  public synchronized Optional<BlockLease> lease(int index) {
    if (leases[index] == null) {
      SuperBlock sb = superBlocks.get(index);
      if (!sb.pin()) { // the lease's own pin, which it takes over
        return Optional.empty();
      }
      leases[index] = reads.leaseAt(keys.get(index), places.get(index), sb, false);
    }
    return Optional.ofNullable(leases[index]);
  }

  @Override
  public synchronized void release() {
    for (int i = 0; i < leases.length; i++) {
      if (leases[i] != null) {
        leases[i].close();
        leases[i] = null;
      }
    }
    for (SuperBlock sb : superBlocks) {
      sb.unpin();
      counters.leaseClosed();
    }
  }
}
