package dev.kvcache.spi;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.PrefixPin;
import dev.kvcache.SharedMemorySlice;
import java.nio.ByteBuffer;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The blocks behind a {@link PrefixPin}, for tiers that hold them somewhere other than in local
 * leases (a remote server's lease, say). {@link PrefixPin#over} adds the rest: the timeout, closing
 * once, and waiting for reads under way before {@link #release()}. Indexes passed in are always
 * below {@link #blocks()}, and {@link #release()} is never called while a read is under way.
 */
public interface PinnedBlocks {

  /** How many leading blocks are held. */
  int blocks();

  /** The key of block {@code index}. */
  BlockKey key(int index);

  /** The length in bytes of block {@code index}. */
  int length(int index);

  /**
   * Copies block {@code index} into {@code dst} at its position, which advances by the block's
   * length; {@code dst} has room for it.
   *
   * @return {@link GetStatus#HIT}, or {@link GetStatus#MISS} with {@code dst} unchanged if the
   *     block is no longer held
   */
  GetStatus getInto(int index, ByteBuffer dst);

  /**
   * Hands block {@code index} to {@code reader} as a read-only view, valid only inside the call.
   *
   * @return false, without calling the reader, if the block is no longer held
   */
  boolean read(int index, Consumer<ByteBuffer> reader);

  /**
   * Where block {@code index} lies in shared memory other processes on this host may map, while
   * the blocks are held; empty if it lies elsewhere (the default).
   */
  default Optional<SharedMemorySlice> sharedMemory(int index) {
    return Optional.empty();
  }

  /**
   * The lease of this process that holds block {@code index}, if one does: its bytes stay valid
   * until {@link #release()}. Empty for a block held another way (a remote server's lease), the
   * default. {@link PrefixPin#share} hands it on without a copy.
   */
  default Optional<BlockLease> lease(int index) {
    return Optional.empty();
  }

  /** Lets go of the blocks; called once. */
  void release();
}
