package dev.kvcache;

import java.nio.ByteBuffer;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * A block stored piece by piece, for bytes that arrive in parts such as a network body. Each part
 * is copied once, into the block's place in the cache (the RAM tier, the disk tier, and the tiered
 * cache over them), or into the request that carries it to a remote tier's server; no buffer of
 * the whole block lies between the parts and that place.
 *
 * <p>Opened by {@link KvCache#writer} with the block's length, which is reserved at once. The block
 * becomes findable only when {@link #commit()} stores it; until then a reader of the key sees the
 * previous block or a miss, never a partly written one. Closing a writer that was not committed
 * drops its bytes and frees its room, so a writer belongs in a try-with-resources block or an
 * equivalent cleanup:
 *
 * <pre>{@code
 * try (BlockWriter writer = cache.writer(key, length)) {
 *   if (writer.rejection().isPresent()) {
 *     return writer.rejection().get();
 *   }
 *   while (writer.remaining() > 0) {
 *     writer.write(nextPart());
 *   }
 *   return writer.commit();
 * }
 * }</pre>
 *
 * <p>Writes and the commit come from one thread at a time (a hand-off between threads must
 * establish happens-before, as executors do). {@link #close()} may come from any thread at any
 * time, for instance when a body times out: it waits for a write under way to finish.
 */
public interface BlockWriter extends AutoCloseable {

  /** The key the block will be stored under. */
  BlockKey key();

  /** The block's length in bytes, as given when the writer was opened. */
  int length();

  /** Bytes still to be written before {@link #commit()}; 0 for a rejected writer. */
  int remaining();

  /**
   * Why no room was reserved ({@link PutStatus#REJECTED_TOO_LARGE} or {@link
   * PutStatus#REJECTED_NO_SPACE}); empty if the writer takes bytes. A rejected writer changed
   * nothing in the cache; writing to it is an error.
   */
  Optional<PutStatus> rejection();

  /**
   * Copies all of {@code src}'s remaining bytes into the block after those written so far, and
   * advances {@code src}'s position to its limit.
   *
   * @throws IllegalArgumentException if {@code src} holds more than {@link #remaining()} bytes;
   *     nothing is copied
   * @throws IllegalStateException if the writer was rejected, committed or closed
   */
  void write(ByteBuffer src);

  /**
   * Stores the block under its key, replacing any block stored under it, as {@link KvCache#put}
   * does. The writer is done afterwards; closing it does nothing more.
   *
   * @return {@link PutStatus#STORED} if the block can now be found, otherwise why not
   * @throws IllegalStateException if bytes are still missing ({@link #remaining()} is not 0), or
   *     the writer was rejected, committed or closed, or the cache was closed meanwhile
   */
  PutStatus commit();

  /**
   * Whether {@link #commit()} may have to wait now: for a lower tier's write or delete, for a
   * write-behind backlog to drain, or for another thread's write of the same key. A caller on a
   * thread that must not block (a network event loop) commits elsewhere when it is true. A writer
   * from {@link KvCache#tryWriter} answers false unless the cache changed since it was opened;
   * the default is false, for tiers whose commit never waits.
   */
  default boolean commitMayWait() {
    return false;
  }

  /**
   * Commits as {@link #commit()} does if that need not wait; empty, the writer still open, if it
   * may ({@link #commitMayWait}, or the cache finds a lock it needs taken). A caller on a thread
   * that must not block (a network event loop) commits elsewhere when it is empty; unlike asking
   * {@link #commitMayWait} first, nothing can start waiting in between.
   *
   * @throws IllegalStateException as {@link #commit()} does
   */
  default Optional<PutStatus> tryCommit() {
    return commitMayWait() ? Optional.empty() : Optional.of(commit());
  }

  /**
   * Whether {@link #write} may wait: for a device or a network, where a writer writes its parts
   * as they come (a disk tier's writer writes them to the block's file). A caller on a thread that
   * must not block (a network event loop) writes elsewhere when it is true. The default is true; a
   * writer that copies into memory answers false.
   */
  default boolean writesMayWait() {
    return true;
  }

  /**
   * The CRC32C (Castagnoli) of the bytes written so far, computed as they are written; once all
   * are written, the block's checksum, which the tier keeps with the block ({@link
   * BlockLease#crc32c()}) and which a server compares with the one its client sent before it
   * commits. Empty if this writer computes none.
   */
  default OptionalInt crc32c() {
    return OptionalInt.empty();
  }

  /** Drops the block unless it was committed, freeing its room. Closing twice does nothing. */
  @Override
  void close();

  /** A writer that reserved nothing, because of {@code reason}. */
  static BlockWriter rejected(BlockKey key, int length, PutStatus reason) {
    return new RejectedWriter(key, length, reason);
  }
}
