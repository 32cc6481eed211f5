package dev.kvcache.spi;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.BlockWriter;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.PrefixLocation;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.LongSupplier;

/**
 * One storage tier of a cache: off-heap RAM, local disk, or a remote server.
 *
 * <p>A tier is a complete {@link KvCache} on its own; the tiered cache stacks tiers and moves
 * blocks between them through {@link BlockEvictionListener}s. Every implementation must pass the
 * shared contract suite ({@code TierContractTest} in kvcache-core's test jar), which pins down the
 * behaviour the API documents: statuses, lease pinning, byte-exact reads, bad input and close.
 * {@link AbstractTier} makes the checks of bad input and of a closed tier once, for every tier
 * built on it.
 */
public interface Tier extends KvCache {

  /** A short name for logs and metrics, such as {@code "ram"} or {@code "disk"}. */
  String name();

  /** The tier's hard budget in bytes, payload plus the tier's own overhead. */
  long capacityBytes();

  /** The largest block this tier accepts, in bytes. */
  int maxBlockBytes();

  /**
   * Reports this tier to {@code visitor}: the reads it served, its bytes and the counters of its
   * own. A stack reports each of its tiers, top down, handing each the count of the reads it
   * served from it. The default reports {@code hits} and this tier's bytes under {@link #name()};
   * a tier that keeps counters of its own adds them.
   *
   * @param hits the reads this tier served, as the stack above counted them (for the cache's top
   *     tier, the cache's hits)
   */
  default void describe(TierVisitor visitor, LongSupplier hits) {
    visitor.hits(name(), hits);
    visitor.bytes(name(), () -> stats().bytesUsed(), () -> stats().capacityBytes());
  }

  /**
   * The capability {@code type} of this tier, or of a tier below it in a stack: an interface of
   * this package such as {@link NamespaceDrop}, offered by the tiers that can do it. The default
   * offers what this tier implements; a stack asks its tiers, top down.
   */
  default <C> Optional<C> capability(Class<C> type) {
    return type.isInstance(this) ? Optional.of(type.cast(this)) : Optional.empty();
  }

  /**
   * How fast this tier has read its blocks lately. Implementations time the copies they make of
   * their blocks and record them here; the tiered cache also records the reads it makes through
   * the tier's leases. The default is a new, empty rate each call: a tier that keeps none has no
   * estimate.
   */
  default LoadRate loadRate() {
    return new LoadRate();
  }

  /**
   * Says that a tier above this one served a read of {@code key} from its own copy: a tier that
   * evicts by recency and may hold the block too (an object store below RAM and disk) counts it as
   * a use of its copy, so that the blocks hottest above stay in it. Called on the reading thread
   * of every hit above: must not wait or fail. The default does nothing.
   */
  default void usedAbove(BlockKey key) {}

  /**
   * Says that a put of {@code key} is storing a block above this tier, so that this tier's copy,
   * if any, must not be read in its place: the tiers above call it where they drop a key's older
   * copies before a put ({@link #delete} is for a delete the caller asked for). The default
   * deletes the copy.
   *
   * <p>A tier that a fleet shares and whose copies are named by their content (the object tier:
   * a key is a digest of its token prefix under a namespace, so the block stored under it is the
   * same KV) keeps its copy, which other servers read: a re-stored key replaces it with the same
   * bytes, and only a delete or a dropped namespace removes it.
   *
   * @return whether a copy was removed
   */
  default boolean supersede(BlockKey key) {
    return delete(key);
  }

  /**
   * Asks the tier to hand {@code listener} every block it evicts from now on, as a lease on its
   * bytes (one listener; a later call replaces it). Deletes are not evictions.
   *
   * @return whether the tier reports evictions; the default reports none
   */
  default boolean onEviction(BlockEvictionListener listener) {
    return false;
  }

  /**
   * Asks the tier to tell {@code listener} which blocks it stores and drops from now on (one
   * listener; a later call replaces it). A stack hands the listener to each of its tiers, so that
   * it hears each tier by name.
   *
   * @return whether the tier tells; the default tells nothing (a remote tier, whose server tells
   *     its own listeners)
   */
  default boolean listen(BlockListener listener) {
    return false;
  }

  /** As {@link KvCache#locatePrefix}: one run in this tier, estimated from {@link #loadRate()}. */
  @Override
  default PrefixLocation locatePrefix(List<BlockKey> keys) {
    int blocks = lookupPrefix(keys);
    return PrefixLocation.of(name(), blocks, loadRate().estimate(blocks, -1));
  }

  /**
   * As {@link #put}, for bytes whose CRC32C the caller holds (a block another tier stored with its
   * checksum, on its way down): stores them only if they still have it, so that bytes damaged
   * since are never stored as if intact under a checksum of this tier's own. A tier that copies
   * the bytes may check the copy it writes instead of reading them twice; the default checks them
   * first.
   *
   * @param crc32c the checksum the bytes were stored with
   * @throws ChecksumMismatchException if the bytes do not have it; nothing is stored then
   */
  default PutStatus putChecked(BlockKey key, ByteBuffer src, int crc32c) {
    ChecksumMismatchException.check(key, src, crc32c);
    return put(key, src);
  }

  /**
   * As {@link KvCache#writer}; a block above {@link #maxBlockBytes()} is rejected at once. The
   * default gathers the parts in a heap buffer of the whole block and {@link #put}s it on commit;
   * a tier that can write in place overrides it.
   */
  @Override
  default BlockWriter writer(BlockKey key, int length) {
    Objects.requireNonNull(key, "key");
    if (length > maxBlockBytes()) {
      return BlockWriter.rejected(key, length, PutStatus.REJECTED_TOO_LARGE);
    }
    return new StagedWriter(this, key, length);
  }

  /**
   * As {@link KvCache#pinPrefix}. The default holds a lease from {@link #get} on each leading
   * block found; a tier that holds its blocks another way pins them with {@link
   * PinnedPrefix#over}.
   */
  @Override
  default PrefixPin pinPrefix(List<BlockKey> keys, Duration timeout) {
    Objects.requireNonNull(keys, "keys");
    PinnedPrefix.requirePositive(timeout);
    List<BlockLease> leases = new ArrayList<>();
    try {
      for (BlockKey key : keys) {
        BlockLease lease = get(key);
        if (lease.status() != GetStatus.HIT) {
          lease.close();
          break;
        }
        leases.add(lease);
      }
    } catch (RuntimeException e) {
      leases.forEach(BlockLease::close);
      throw e;
    }
    return PinnedPrefix.of(leases, timeout);
  }
}
