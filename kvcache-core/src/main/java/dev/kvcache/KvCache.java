package dev.kvcache;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A store of KV-cache blocks: opaque byte payloads, typically 64 KiB to 64 MiB, under 128-bit
 * {@link BlockKey}s.
 *
 * <p>An inference engine asks, in order: how many leading blocks of this prompt are cached ({@link
 * #lookupPrefix}, or {@link #pinPrefix} to also hold them until loaded), give me those blocks
 * ({@link #get} for a zero-copy lease or {@link #getInto} for one copy into its own buffer), and,
 * after prefill, store the new blocks ({@link #put}).
 *
 * <p>Expected outcomes (a miss, a block too large, no room) are reported as {@link PutStatus} and
 * {@link GetStatus} values. Exceptions are for programmer errors: {@code null} arguments ({@link
 * NullPointerException}), empty or read-only buffers and other invalid arguments ({@link
 * IllegalArgumentException}, {@link java.nio.ReadOnlyBufferException}), and calls on a closed cache
 * ({@link IllegalStateException}).
 *
 * <p>All methods are thread-safe. A cache may drop any block at any time to make room, but it never
 * returns bytes other than those last put under the key.
 *
 * <p>{@code dev.kvcache.tiered.KvCacheBuilder} assembles an embedded cache: RAM alone or over lower
 * tiers.
 *
 * <pre>{@code
 * try (KvCache cache = KvCacheBuilder.newBuilder().ramBytes(8L << 30).build()) {
 *   List<BlockKey> keys = PrefixKeys.of(namespace, 16).keysFor(tokenIds);
 *   int cached = cache.lookupPrefix(keys);
 *   ...
 * }
 * }</pre>
 */
public interface KvCache extends AutoCloseable {

  /**
   * Stores the bytes between {@code src}'s position and limit under {@code key}, replacing any
   * block already stored under it. The bytes are copied once, straight into their place in the
   * cache; {@code src}'s position is not changed.
   *
   * @return {@link PutStatus#STORED} if the block can now be found, otherwise why not
   * @throws IllegalArgumentException if {@code src} has no bytes remaining
   */
  PutStatus put(BlockKey key, ByteBuffer src);

  /**
   * Opens a writer for a block of {@code length} bytes to be stored under {@code key}, for bytes
   * that arrive in parts: see {@link BlockWriter}. Room for the block is reserved now; if none can
   * be had, the writer's {@link BlockWriter#rejection()} says why.
   *
   * <p>The RAM tier, the disk tier and the tiered cache write the parts in place; the remote tier
   * streams them to its server.
   *
   * @throws IllegalArgumentException if {@code length} is not positive
   * @throws IllegalStateException if the cache is closed (at once, or from {@link
   *     BlockWriter#commit()})
   */
  BlockWriter writer(BlockKey key, int length);

  /**
   * Opens a writer as {@link #writer} does, but only if that needs no waiting and little work:
   * empty if room for the block depends on another thread first (in a tiered cache, the spill
   * threads writing blocks RAM evicted down to the lower tier), or would take moving more than
   * the block's own length of other blocks. The writer's commit does not wait for room either.
   * For callers on a thread that must not block, such as a network event loop: on empty, they
   * open the writer with {@link #writer} where waiting is fine.
   *
   * <p>The default implementation is always empty. The RAM tier opens a writer now unless only
   * a compaction without a bound would make room; the tiered cache does when the block goes to
   * RAM and RAM opens one so.
   *
   * @throws IllegalArgumentException if {@code length} is not positive
   * @throws IllegalStateException if the cache is closed
   */
  default Optional<BlockWriter> tryWriter(BlockKey key, int length) {
    Objects.requireNonNull(key, "key");
    if (length <= 0) {
      throw new IllegalArgumentException("cannot store an empty block, got a length of " + length);
    }
    return Optional.empty();
  }

  /**
   * Leases the block stored under {@code key} without copying it. The returned lease must be
   * closed; on a miss its status is {@link GetStatus#MISS} and closing it does nothing.
   */
  BlockLease get(BlockKey key);

  /**
   * Whether a read may wait for a device or the network: a block on a disk, in an object store or
   * on another server. A thread that must not wait (a server's event loop) then reads with {@link
   * #tryGet}, and hands what that leaves over to a thread that may. The default: true.
   */
  default boolean readsMayWait() {
    return true;
  }

  /**
   * As {@link #get}, for a thread that must not wait (a server's event loop): the lease (a hit, or
   * a miss) if the cache can answer from memory, without waiting for a device or the network;
   * empty if it cannot, when {@link #get} on a thread that may wait answers. The default: {@link
   * #get} if reads never wait ({@link #readsMayWait}), empty otherwise.
   */
  default Optional<BlockLease> tryGet(BlockKey key) {
    Objects.requireNonNull(key, "key");
    return readsMayWait() ? Optional.empty() : Optional.of(get(key));
  }

  /**
   * Leases each block, as {@link #get} does: one lease per key, in order, a miss where the block is
   * not cached. A tier that reads from far away (an object store) reads the blocks at once rather
   * than one after another. Every lease returned must be closed.
   */
  default List<BlockLease> getAll(List<BlockKey> keys) {
    Objects.requireNonNull(keys, "keys");
    List<BlockLease> leases = new ArrayList<>(keys.size());
    try {
      for (BlockKey key : keys) {
        leases.add(get(key));
      }
    } catch (RuntimeException e) {
      leases.forEach(BlockLease::close);
      throw e;
    }
    return leases;
  }

  /**
   * Copies the block stored under {@code key} into {@code dst} at its position, advancing the
   * position by the block's length.
   *
   * @return {@link GetStatus#HIT} if copied; {@link GetStatus#MISS}, leaving {@code dst}'s
   *     position unchanged (a tier that checks a checksum while it copies may have written over
   *     the bytes after the position before finding the block damaged); or {@link
   *     GetStatus#BUFFER_TOO_SMALL}, leaving {@code dst} unchanged
   * @throws java.nio.ReadOnlyBufferException if {@code dst} is read-only
   */
  GetStatus getInto(BlockKey key, ByteBuffer dst);

  /** Whether a block is stored under {@code key}; does not count as an access for the policy. */
  boolean contains(BlockKey key);

  /**
   * Removes the block stored under {@code key}. Open leases on it stay valid; its memory is reused
   * once they are closed.
   *
   * @return true if a block was removed
   */
  boolean delete(BlockKey key);

  /**
   * How many leading keys of {@code keys} are cached: the engine can skip prefill for that many
   * blocks. Stops at the first key not present.
   */
  default int lookupPrefix(List<BlockKey> keys) {
    Objects.requireNonNull(keys, "keys");
    int n = 0;
    for (BlockKey key : keys) {
      if (!contains(key)) {
        break;
      }
      n++;
    }
    return n;
  }

  /**
   * Finds the leading keys of {@code keys} that are cached, as {@link #lookupPrefix} does, and says
   * which tier holds each run of them and how long loading them should take, from the tiers'
   * recent reads: an engine loads them only if that beats recomputing them. Counts no hit or miss.
   *
   * <p>The default implementation reports one run in a tier named {@code cache} with no estimate.
   * The tiers, and the tiered cache over them, report their own runs and estimates.
   */
  default PrefixLocation locatePrefix(List<BlockKey> keys) {
    return PrefixLocation.of("cache", lookupPrefix(keys), Optional.empty());
  }

  /**
   * Finds the leading keys of {@code keys} that are cached, as {@link #lookupPrefix} does, and pins
   * those blocks against eviction until the returned pin is closed or {@code timeout} passes, so
   * that the blocks counted are still there when the engine loads them. Each pinned block counts as
   * a hit, the first key not found as a miss.
   *
   * @throws IllegalArgumentException if {@code timeout} is not positive
   */
  PrefixPin pinPrefix(List<BlockKey> keys, Duration timeout);

  /**
   * Copies each block into the buffer at the same index, as {@link #getInto} does.
   *
   * @return the status of each block, in order
   * @throws IllegalArgumentException if the lists differ in size
   */
  default GetStatus[] getAllInto(List<BlockKey> keys, List<ByteBuffer> dsts) {
    Objects.requireNonNull(keys, "keys");
    Objects.requireNonNull(dsts, "dsts");
    if (keys.size() != dsts.size()) {
      throw new IllegalArgumentException(
          keys.size() + " keys but " + dsts.size() + " destination buffers");
    }
    GetStatus[] result = new GetStatus[keys.size()];
    for (int i = 0; i < result.length; i++) {
      result[i] = getInto(keys.get(i), dsts.get(i));
    }
    return result;
  }

  /**
   * Stores each buffer under the key at the same index, as {@link #put} does.
   *
   * @return the status of each block, in order
   * @throws IllegalArgumentException if the lists differ in size
   */
  default PutStatus[] putAll(List<BlockKey> keys, List<ByteBuffer> srcs) {
    Objects.requireNonNull(keys, "keys");
    Objects.requireNonNull(srcs, "srcs");
    if (keys.size() != srcs.size()) {
      throw new IllegalArgumentException(keys.size() + " keys but " + srcs.size() + " buffers");
    }
    PutStatus[] result = new PutStatus[keys.size()];
    for (int i = 0; i < result.length; i++) {
      result[i] = put(keys.get(i), srcs.get(i));
    }
    return result;
  }

  /** A snapshot of the counters. Also available after {@link #close()}. */
  CacheStats stats();

  /**
   * Whether the cache works as configured, or which of its promises are on hold and why (a disk
   * tier without room, writes failing). The default is always healthy: a RAM tier has nothing
   * that can fail this way.
   */
  default CacheHealth health() {
    return CacheHealth.OK;
  }

  /**
   * Drops every block and stops accepting calls. Memory pinned by open leases is released when
   * they close. Closing twice does nothing.
   */
  @Override
  void close();
}
