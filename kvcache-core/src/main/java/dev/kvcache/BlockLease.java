package dev.kvcache;

import java.nio.ByteBuffer;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * A read-only, zero-copy view of a cached block, pinned where it lies until the lease is closed.
 *
 * <p>While a lease is open, eviction, deletion and memory compaction cannot free or move its
 * bytes: a block deleted or evicted during the lease disappears from lookups at once, but its
 * memory is reused only after the last lease on it is closed. Close every lease, preferably with
 * try-with-resources:
 *
 * <pre>{@code
 * try (BlockLease lease = cache.get(key)) {
 *   if (lease.status() == GetStatus.HIT) {
 *     consume(lease.bytes());
 *   }
 * }
 * }</pre>
 *
 * <p>A lookup that finds nothing returns a lease whose {@link #status()} is {@link GetStatus#MISS};
 * closing it does nothing. Closing a real lease twice is a programmer error and throws {@link
 * IllegalStateException}, without releasing the block twice. Reading a buffer obtained from a lease
 * after closing it is also an error: it stays memory-safe, but may show another block's bytes.
 *
 * <p>A lease may be closed by a different thread than the one that opened it.
 */
public interface BlockLease extends AutoCloseable {

  /** {@link GetStatus#HIT} for a lease holding a block, {@link GetStatus#MISS} otherwise. */
  GetStatus status();

  /** The key of the leased block. */
  BlockKey key();

  /** The block's length in bytes; 0 for a miss. */
  int length();

  /**
   * A new read-only view of the block's bytes, position 0 and limit {@link #length()}.
   *
   * @throws IllegalStateException if this is a miss or the lease is closed
   */
  ByteBuffer bytes();

  /**
   * The CRC32C (Castagnoli) of the block's bytes, as the tier took it when the block was written
   * (not computed on this read), or empty if the tier keeps none for this block. The tiers of this
   * project keep one for every block (an LZ4-coded disk record's is computed as it is decoded). A
   * server sends it with the block, so that its client can check the bytes it received end to end,
   * and a copy of the block into another tier checks its bytes against it.
   */
  default OptionalInt crc32c() {
    return OptionalInt.empty();
  }

  /**
   * Where the block's bytes lie in shared memory that other processes on this host may map, while
   * this lease is open; empty unless the tier keeps them there (a RAM tier configured with {@link
   * dev.kvcache.ram.RamTierConfig#withSharedMemory}).
   */
  default Optional<SharedMemorySlice> sharedMemory() {
    return Optional.empty();
  }

  /**
   * Releases the pin on the block.
   *
   * @throws IllegalStateException if this lease was already closed
   */
  @Override
  void close();

  /** The lease returned for a key that is not cached. */
  static BlockLease miss(BlockKey key) {
    return new MissLease(key);
  }
}
