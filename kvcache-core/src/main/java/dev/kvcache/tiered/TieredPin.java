package dev.kvcache.tiered;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.PrefixPin;
import dev.kvcache.SharedMemorySlice;
import dev.kvcache.spi.PinnedBlocks;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * The blocks behind a tiered cache's prefix pin, in key order: leases on copies in RAM or the spill
 * queue, and runs of blocks the lower tier pinned in its own way (a remote tier under its servers'
 * leases). A block read through a lower pin is offered for promotion into RAM, as a lower-tier hit
 * read by {@code get} is.
 */
final class TieredPin implements PinnedBlocks {

  /** One block: a lease, or an index into a pin of the lower tier. */
  private record Held(BlockLease lease, PrefixPin below, int index) {}

  private final BiConsumer<BlockKey, ByteBuffer> promotion;
  private final List<Held> held = new ArrayList<>();
  private final List<PrefixPin> belowPins = new ArrayList<>();

  /** @param promotion offered each block read through a lower pin, with a view of its bytes */
  TieredPin(BiConsumer<BlockKey, ByteBuffer> promotion) {
    this.promotion = promotion;
  }

  /** Adds the next block, held by {@code lease} (a hit). */
  void add(BlockLease lease) {
    held.add(new Held(lease, null, 0));
  }

  /**
   * Adds the blocks of {@code below}, which the pin now closes (at once, if it holds none).
   *
   * @return how many blocks it holds
   */
  int add(PrefixPin below) {
    int blocks = below.blocks();
    if (blocks == 0) {
      below.close();
      return 0;
    }
    belowPins.add(below);
    for (int i = 0; i < blocks; i++) {
      held.add(new Held(null, below, i));
    }
    return blocks;
  }

  @Override
  public int blocks() {
    return held.size();
  }

  @Override
  public BlockKey key(int index) {
    Held h = held.get(index);
    return h.lease != null ? h.lease.key() : h.below.key(h.index);
  }

  @Override
  public int length(int index) {
    Held h = held.get(index);
    return h.lease != null ? h.lease.length() : h.below.length(h.index);
  }

  @Override
  public GetStatus getInto(int index, ByteBuffer dst) {
    Held h = held.get(index);
    if (h.lease != null) {
      dst.put(h.lease.bytes());
      return GetStatus.HIT;
    }
    int start = dst.position();
    GetStatus status = h.below.getInto(h.index, dst);
    if (status == GetStatus.HIT) {
      promotion.accept(h.below.key(h.index), dst.duplicate().flip().position(start));
    }
    return status;
  }

  @Override
  public boolean read(int index, Consumer<ByteBuffer> reader) {
    Held h = held.get(index);
    if (h.lease != null) {
      reader.accept(h.lease.bytes());
      return true;
    }
    return h.below.read(h.index, view -> {
      ByteBuffer bytes = view.duplicate();
      reader.accept(view);
      promotion.accept(h.below.key(h.index), bytes);
    });
  }

  @Override
  public Optional<SharedMemorySlice> sharedMemory(int index) {
    Held h = held.get(index);
    return h.lease != null ? h.lease.sharedMemory() : h.below.sharedMemory(h.index);
  }

  @Override
  public Optional<BlockLease> lease(int index) {
    return Optional.ofNullable(held.get(index).lease);
  }

  @Override
  public void release() {
    for (Held h : held) {
      if (h.lease != null) {
        h.lease.close();
      }
    }
    belowPins.forEach(PrefixPin::close);
  }
}
