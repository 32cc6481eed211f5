package dev.kvcache.client;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.spi.PinnedBlocks;
import dev.kvcache.spi.TierCounters;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.function.Consumer;

/**
 * The leading blocks of a pinned lookup, held by the servers under their leases: a block's bytes
 * are fetched only when the engine reads it. Counted as open leases of the tier until released.
 */
final class RemotePin implements PinnedBlocks {

  /** One server's lease on the blocks it found, in the order of its own keys. */
  record Lease(ServerLink link, String id) {}

  /** Where block {@code i} of the prefix is: its server's lease and its index there. */
  record Block(BlockKey key, int length, Lease lease, int index) {}

  private final PrefixLookups lookups;
  private final List<Block> blocks;
  private final List<Lease> leases;
  private final TierCounters counters;

  /**
   * @param leases every lease the lookup opened, released together (some may hold only blocks
   *     past the prefix)
   */
  RemotePin(PrefixLookups lookups, List<Block> blocks, List<Lease> leases, TierCounters counters) {
    this.lookups = lookups;
    this.blocks = List.copyOf(blocks);
    this.leases = List.copyOf(leases);
    this.counters = counters;
    for (int i = 0; i < this.blocks.size(); i++) {
      counters.leaseOpened();
    }
  }

  @Override
  public int blocks() {
    return blocks.size();
  }

  @Override
  public BlockKey key(int index) {
    return blocks.get(index).key();
  }

  @Override
  public int length(int index) {
    return blocks.get(index).length();
  }

  @Override
  public GetStatus getInto(int index, ByteBuffer dst) {
    return lookups.fetch(blocks.get(index), dst);
  }

  @Override
  public boolean read(int index, Consumer<ByteBuffer> reader) {
    Block block = blocks.get(index);
    ByteBuffer bytes = ByteBuffer.allocateDirect(block.length());
    if (lookups.fetch(block, bytes) != GetStatus.HIT) {
      return false;
    }
    reader.accept(bytes.flip().asReadOnlyBuffer());
    return true;
  }

  @Override
  public void release() {
    for (int i = 0; i < blocks.size(); i++) {
      counters.leaseClosed();
    }
    leases.forEach(lookups::release);
  }
}
