package dev.kvcache.spi;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.BlockWriter;
import dev.kvcache.GetStatus;
import dev.kvcache.PrefixLocation;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * A {@link Tier} whose entry points check their arguments and the tier's state in one place, and
 * in one order, before the tier's own work, and that keeps the tier's {@link TierCounters}.
 *
 * <p>Each entry point makes those of these checks that apply to it, in this order:
 *
 * <ol>
 *   <li>the key, or the list of keys, is not null ({@link NullPointerException}); for {@link
 *       #getAll}, which reads every key, no key in the list is null either;
 *   <li>the buffer ({@code src} or {@code dst}) is not null ({@link NullPointerException}), and a
 *       pin's timeout is positive ({@link PinnedPrefix#requirePositive});
 *   <li>the tier is open ({@link #ensureOpen()}: {@link IllegalStateException});
 *   <li>a destination buffer is writable ({@link ReadOnlyBufferException});
 *   <li>a block to be stored is not empty ({@link IllegalArgumentException}) and not larger than
 *       {@link #maxBlockBytes()}: a larger one is counted as a rejection and answered {@link
 *       PutStatus#REJECTED_TOO_LARGE}, or a writer rejected so, and the tier is not asked.
 * </ol>
 *
 * <p>Then it calls the protected method that does the work, with arguments that passed: {@link
 * #get} calls {@link #lease}, {@link #getInto} {@link #copyInto}, {@link #contains} {@link #holds},
 * {@link #delete} {@link #remove}, {@link #put} {@link #store}, {@link #putChecked} {@link
 * #storeChecked}, {@link #writer} {@link #openWriter}, {@link #getAll} {@link #leaseAll}, {@link
 * #lookupPrefix} {@link #countPrefix}, {@link #locatePrefix} {@link #locate} and {@link
 * #pinPrefix} {@link #pin}. The keys of a prefix lookup or pin are not checked one by one here: the
 * lookup stops at the first key not held, and never looks at those past it.
 */
public abstract class AbstractTier implements Tier {

  private final TierCounters counters = new TierCounters();
  private volatile BlockListener listener;

  /** The tier's counters, which {@link #stats()} reports; the size check counts its rejections. */
  protected final TierCounters counters() {
    return counters;
  }

  /**
   * Tells {@code listener} what this tier stores and drops, as the tier calls {@link #stored} and
   * {@link #removed}.
   */
  @Override
  public boolean listen(BlockListener listener) {
    this.listener = Objects.requireNonNull(listener, "listener");
    return true;
  }

  /**
   * Tells the listener, if any, that {@code key} is now held by this tier: for a tier to call once
   * a block it stored is findable.
   */
  protected final void stored(BlockKey key) {
    BlockListener l = listener;
    if (l != null) {
      l.stored(name(), key);
    }
  }

  /**
   * Tells the listener, if any, that {@code key} has left this tier: for a tier to call once a
   * block it held is no longer findable.
   */
  protected final void removed(BlockKey key) {
    BlockListener l = listener;
    if (l != null) {
      l.removed(name(), key);
    }
  }

  /**
   * The tag the listener gives block {@code key}, if it is a {@link BlockTags}: for a tier that
   * keeps tags, as it writes the block; null if there is none, or it is longer than {@link
   * BlockTags#MAX_TAG_BYTES}.
   */
  protected final byte[] tagOf(BlockKey key) {
    BlockTags tags = tags();
    byte[] tag = tags == null ? null : tags.tagOf(key);
    return tag == null || tag.length == 0 || tag.length > BlockTags.MAX_TAG_BYTES ? null : tag;
  }

  /** The listener, if it is a {@link BlockTags}; null otherwise. */
  protected final BlockTags tags() {
    return listener instanceof BlockTags tags ? tags : null;
  }

  /**
   * Checks that the tier is open.
   *
   * @throws IllegalStateException if it is closed, with a message that names the tier
   */
  protected abstract void ensureOpen();

  /**
   * Checks a block of {@code length} bytes about to be stored under {@code key}: the key, that the
   * tier is open, and the length, as {@link #put} and {@link #writer} do. For a tier's own ways to
   * store a block, such as a {@link #tryWriter} that does not wait.
   *
   * @return false, counted as a rejection, if the block is larger than {@link #maxBlockBytes()}
   * @throws IllegalArgumentException if {@code length} is not positive
   */
  protected final boolean takes(BlockKey key, int length) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    return PutChecks.fits(key, length, maxBlockBytes(), counters);
  }

  @Override
  public final BlockLease get(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    return lease(key);
  }

  @Override
  public final GetStatus getInto(BlockKey key, ByteBuffer dst) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(dst, "dst");
    ensureOpen();
    if (dst.isReadOnly()) {
      throw new ReadOnlyBufferException();
    }
    return copyInto(key, dst);
  }

  @Override
  public final boolean contains(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    return holds(key);
  }

  @Override
  public final boolean delete(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    return remove(key);
  }

  @Override
  public final PutStatus put(BlockKey key, ByteBuffer src) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(src, "src");
    return takes(key, src.remaining()) ? store(key, src) : PutStatus.REJECTED_TOO_LARGE;
  }

  @Override
  public final PutStatus putChecked(BlockKey key, ByteBuffer src, int crc32c) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(src, "src");
    return takes(key, src.remaining())
        ? storeChecked(key, src, crc32c)
        : PutStatus.REJECTED_TOO_LARGE;
  }

  @Override
  public final BlockWriter writer(BlockKey key, int length) {
    return takes(key, length)
        ? openWriter(key, length)
        : BlockWriter.rejected(key, length, PutStatus.REJECTED_TOO_LARGE);
  }

  @Override
  public final List<BlockLease> getAll(List<BlockKey> keys) {
    Objects.requireNonNull(keys, "keys");
    keys.forEach(key -> Objects.requireNonNull(key, "key"));
    ensureOpen();
    return leaseAll(keys);
  }

  @Override
  public final int lookupPrefix(List<BlockKey> keys) {
    Objects.requireNonNull(keys, "keys");
    ensureOpen();
    return countPrefix(keys);
  }

  @Override
  public final PrefixLocation locatePrefix(List<BlockKey> keys) {
    Objects.requireNonNull(keys, "keys");
    ensureOpen();
    return locate(keys);
  }

  @Override
  public final PrefixPin pinPrefix(List<BlockKey> keys, Duration timeout) {
    Objects.requireNonNull(keys, "keys");
    PinnedPrefix.requirePositive(timeout);
    ensureOpen();
    return pin(keys, timeout);
  }

  /**
   * Leases the block stored under {@code key}, as {@link #get} documents, counting a hit or a
   * miss. The tier is open.
   */
  protected abstract BlockLease lease(BlockKey key);

  /**
   * Copies the block stored under {@code key} into {@code dst}, as {@link #getInto} documents,
   * counting a hit or a miss. The tier is open and {@code dst} writable.
   */
  protected abstract GetStatus copyInto(BlockKey key, ByteBuffer dst);

  /**
   * Whether a block is stored under {@code key}, as {@link #contains} documents. The tier is open.
   */
  protected abstract boolean holds(BlockKey key);

  /**
   * Removes the block stored under {@code key}, as {@link #delete} documents, counting a delete if
   * one was removed. The tier is open.
   */
  protected abstract boolean remove(BlockKey key);

  /**
   * Stores the bytes between {@code src}'s position and limit under {@code key}, as {@link #put}
   * documents, counting a put or a rejection. The tier is open and the block neither empty nor
   * larger than {@link #maxBlockBytes()}.
   */
  protected abstract PutStatus store(BlockKey key, ByteBuffer src);

  /**
   * Stores the bytes only if they have {@code crc32c}, as {@link #putChecked} documents; checked
   * as {@link #store} is. The default checks them first, then {@link #store}s them; a tier that
   * copies the bytes may check the copy it writes instead.
   *
   * @throws ChecksumMismatchException if the bytes do not have the checksum; nothing is stored
   */
  protected PutStatus storeChecked(BlockKey key, ByteBuffer src, int crc32c) {
    ChecksumMismatchException.check(key, src, crc32c);
    return store(key, src);
  }

  /**
   * Opens a writer for a block of {@code length} bytes under {@code key}, as {@link #writer}
   * documents; checked as {@link #store} is.
   */
  protected abstract BlockWriter openWriter(BlockKey key, int length);

  /**
   * A writer that gathers the parts in a heap buffer of the whole block and {@link #put}s it on
   * commit: for blocks a tier cannot write in place.
   */
  protected final BlockWriter stagedWriter(BlockKey key, int length) {
    return new StagedWriter(this, key, length);
  }

  /**
   * Leases each block, as {@link #getAll} documents; no key is null and the tier is open. The
   * default leases them one after another with {@link #get}.
   */
  protected List<BlockLease> leaseAll(List<BlockKey> keys) {
    return Tier.super.getAll(keys);
  }

  /**
   * How many leading keys of {@code keys} are stored, as {@link #lookupPrefix} documents; the
   * tier is open. The default asks {@link #contains} about each key in turn.
   */
  protected int countPrefix(List<BlockKey> keys) {
    return Tier.super.lookupPrefix(keys);
  }

  /**
   * Where the leading keys of {@code keys} are, as {@link #locatePrefix} documents; the tier is
   * open. The default: one run in this tier of {@link #lookupPrefix}'s length, estimated from
   * {@link #loadRate()}.
   */
  protected PrefixLocation locate(List<BlockKey> keys) {
    return Tier.super.locatePrefix(keys);
  }

  /**
   * Pins the leading keys of {@code keys} that are stored, as {@link #pinPrefix} documents; the
   * timeout is positive and the tier open. The default holds a lease from {@link #get} on each
   * leading block found.
   */
  protected PrefixPin pin(List<BlockKey> keys, Duration timeout) {
    return Tier.super.pinPrefix(keys, timeout);
  }
}
