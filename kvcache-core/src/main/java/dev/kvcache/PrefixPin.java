package dev.kvcache;

import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.util.Optional;
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
 * does nothing. Tiers make their pins with {@code dev.kvcache.spi.PinnedPrefix}.
 */
public interface PrefixPin extends AutoCloseable {

  /** How many leading blocks were found and pinned. */
  int blocks();

  /**
   * The key of pinned block {@code index}.
   *
   * @throws IndexOutOfBoundsException if {@code index} is not below {@link #blocks()}
   */
  BlockKey key(int index);

  /**
   * The length in bytes of pinned block {@code index}.
   *
   * @throws IndexOutOfBoundsException if {@code index} is not below {@link #blocks()}
   */
  int length(int index);

  /**
   * Copies pinned block {@code index} into {@code dst} at its position, which advances by the
   * block's length.
   *
   * @return {@link GetStatus#HIT}; {@link GetStatus#BUFFER_TOO_SMALL} with {@code dst} unchanged;
   *     or {@link GetStatus#MISS} if the pin was closed or expired
   * @throws IndexOutOfBoundsException if {@code index} is not below {@link #blocks()}
   * @throws ReadOnlyBufferException if {@code dst} is read-only
   */
  GetStatus getInto(int index, ByteBuffer dst);

  /**
   * Hands pinned block {@code index} to {@code reader} as a read-only view, without copying. The
   * view is valid only inside the call.
   *
   * @return false, without calling the reader, if the pin was closed or expired
   * @throws IndexOutOfBoundsException if {@code index} is not below {@link #blocks()}
   */
  boolean read(int index, Consumer<ByteBuffer> reader);

  /**
   * Where pinned block {@code index} lies in shared memory that other processes on this host may
   * map and copy from while the pin holds it (a RAM tier reserved in shared memory); empty if it
   * lies elsewhere, or once the pin was closed or expired. A reader must finish copying before it
   * closes the pin.
   *
   * @throws IndexOutOfBoundsException if {@code index} is not below {@link #blocks()}
   */
  Optional<SharedMemorySlice> sharedMemory(int index);

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
  Optional<BlockLease> share(int index);

  /** Whether the pin has let go of its blocks, by {@link #close()} or by its timeout. */
  boolean isReleased();

  /** Lets go of the blocks; waits for reads under way. Closing twice does nothing. */
  @Override
  void close();
}
