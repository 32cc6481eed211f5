package dev.kvcache.ram;

import dev.kvcache.BlockKey;
import dev.kvcache.Namespace;
import dev.kvcache.BlockLease;
import dev.kvcache.BlockWriter;
import dev.kvcache.CacheStats;
import dev.kvcache.GetStatus;
import dev.kvcache.PrefixLocation;
import dev.kvcache.PutStatus;
import dev.kvcache.internal.memory.CompactionBudget;
import dev.kvcache.internal.memory.OffHeapBlock;
import dev.kvcache.internal.memory.OffHeapMemory;
import dev.kvcache.spi.AbstractBlockWriter;
import dev.kvcache.spi.AbstractTier;
import dev.kvcache.spi.BlockEvictionListener;
import dev.kvcache.spi.LoadRate;
import dev.kvcache.spi.NamespaceRemoval;
import dev.kvcache.spi.QuotaGauges;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierVisitor;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The off-heap RAM tier: block payloads in pre-reserved direct memory, an index and eviction
 * policy on the heap.
 *
 * <h2>Policy and mechanism</h2>
 *
 * An index bounded by the blocks' allocated bytes is also the policy ({@link RamPolicy}): exact LRU
 * by default, or Caffeine's W-TinyLFU. The index's bound may be overshot for a moment (Caffeine's
 * maintenance may be pending), so the hard budget is kept by the allocator ({@link OffHeapMemory}):
 * a put first obtains its memory, and if the allocator has none it asks the policy for its coldest
 * block and evicts that, until the allocation succeeds or nothing evictable is left. The index's
 * own bound is set one maximum-size block below the budget (at most an eighth of it, and never so
 * low that a maximum-size block cannot be admitted), so in steady state the allocator has room and
 * the policy, not this fallback, chooses the victims. Evictions run on the thread whose put (or,
 * with Caffeine, read or delete) caused them, so the eviction listener runs on the caller's
 * thread.
 *
 * <h2>Lifetimes</h2>
 *
 * A block's memory is reference counted ({@link OffHeapBlock}): the index holds the owner's
 * reference, a put holds one while it copies, and every lease or copying read holds one. Removing a
 * block from the index (delete, replace, eviction) drops the owner's reference; the memory is reused once the
 * last lease is closed. A reader racing a delete either gets its reference first and reads the old
 * bytes intact, or fails to and reports a miss.
 *
 * <h2>Eviction hand-off</h2>
 *
 * An optional {@link BlockEvictionListener} receives each evicted block as an open lease, so the
 * next tier down can write it out without a copy while the memory stays pinned and counted here.
 *
 * <h2>Heap cost</h2>
 *
 * Per cached block: the {@link BlockKey} (32 bytes), the {@link OffHeapBlock} (32 bytes), the
 * index's entry and its hash table slot; measured in {@code docs/ram-tier.md}. The allocator's
 * own bookkeeping is per 4 KiB of capacity, not per block.
 */
public final class RamTier extends AbstractTier implements NamespaceRemoval {

  private static final Logger log = LoggerFactory.getLogger(RamTier.class);

  /** A put holds one reference while it copies, the index takes the other. */
  private static final int WRITER_AND_INDEX = 2;

  /** Bound on a put's evict-and-retry loop, in case other threads keep replacing its victims. */
  private static final int MAX_EVICTION_ATTEMPTS_PER_PUT = 4096;

  /** One copy in this many is timed for {@link #loadRate()}. */
  private static final int TIMED_ONE_IN = 8;

  private final RamTierConfig config;
  private final OffHeapMemory memory;
  private final RamIndex index;
  private volatile BlockEvictionListener evictionListener;

  private final LoadRate loadRate = new LoadRate();
  private volatile boolean closed;

  /**
   * A RAM tier without an eviction listener: evicted blocks are dropped.
   *
   * @throws IllegalStateException if the JVM cannot reserve the configured direct memory
   */
  public RamTier(RamTierConfig config) {
    this(config, null);
  }

  /**
   * A RAM tier that hands evicted blocks to {@code evictionListener}.
   *
   * @param evictionListener receives evicted blocks, or null to drop them
   * @throws IllegalStateException if the JVM cannot reserve the configured direct memory
   */
  public RamTier(RamTierConfig config, BlockEvictionListener evictionListener) {
    this.config = Objects.requireNonNull(config, "config");
    this.evictionListener = evictionListener;
    // until the tier has copied a block, the speed at which its first arena was zeroed is the
    // estimate of its loads
    this.memory = new OffHeapMemory(config.capacityBytes(), config.arenaBytes(),
        config.sharedMemoryDir(), (bytes, nanos) -> {
          long seedBytes = Math.min(config.maxBlockBytes(), bytes);
          loadRate.record(seedBytes, Math.max(1, nanos * seedBytes / bytes));
        });
    long largestBlock = OffHeapMemory.allocatedBytesFor(config.maxBlockBytes());
    long headroom =
        Math.min(Math.min(largestBlock, memory.capacityBytes() / 8), memory.capacityBytes() - largestBlock);
    this.index = RamIndex.create(config.policy(), memory.capacityBytes() - headroom, config.quotas(),
        this::onEvicted);
    log.info("RAM tier: {} MiB of {}, reserved and zeroed in the background (largest block {} bytes)",
        memory.capacityBytes() >> 20,
        config.sharedMemoryDir() == null
            ? "direct memory"
            : "shared memory in " + config.sharedMemoryDir(),
        config.maxBlockBytes());
    Path shared = config.sharedMemoryDir();
    if (shared != null && !isMemoryFileSystem(shared)) {
      log.warn("RAM tier: {} is not on a tmpfs: the kernel writes the RAM tier's pages back to its"
          + " device, which is slow and wears it; give a directory on a tmpfs, such as /dev/shm",
          shared);
    }
  }

  /**
   * Waits until the whole budget has been reserved and zeroed, which a thread does in the
   * background from the start (seconds per GiB): until then, a put that finds no room in the
   * memory reserved so far waits for more rather than evicting.
   *
   * @return whether it was reserved within {@code timeoutMillis}
   * @throws IllegalStateException if reserving failed (the tier then keeps what it reserved)
   */
  public boolean awaitReserved(long timeoutMillis) throws InterruptedException {
    return memory.awaitReserved(timeoutMillis);
  }

  /**
   * Holds back the zeroing of RAM tiers built from now until {@link #releaseReservations()}, so
   * that it does not slow a process's start: while a thread zeroes memory the JVM reaches no
   * safepoint, so every collection waits for it, seconds per GiB in all. A put that needs memory
   * not yet zeroed has it zeroed at once. {@code kvcache-server} holds them until it listens.
   */
  public static void holdReservations() {
    OffHeapMemory.holdReservations();
  }

  /** Ends one {@link #holdReservations()}: the tiers built meanwhile start zeroing their memory. */
  public static void releaseReservations() {
    OffHeapMemory.releaseReservations();
  }

  /** Whether {@code dir} lies on a file system kept in memory (tmpfs); true if that is unknown. */
  static boolean isMemoryFileSystem(Path dir) {
    try {
      String type = Files.getFileStore(dir).type();
      return type.equals("tmpfs") || type.equals("ramfs") || type.equals("hugetlbfs");
    } catch (IOException | UnsupportedOperationException e) {
      return true;
    }
  }

  /** Hands evicted blocks to {@code listener} from now on, in place of the one given at creation. */
  @Override
  public boolean onEviction(BlockEvictionListener listener) {
    this.evictionListener = Objects.requireNonNull(listener, "listener");
    return true;
  }

  @Override
  public String name() {
    return "ram";
  }

  @Override
  public long capacityBytes() {
    return memory.capacityBytes();
  }

  @Override
  public int maxBlockBytes() {
    return config.maxBlockBytes();
  }

  /** Which blocks this tier keeps when full. */
  public RamPolicy policy() {
    return config.policy();
  }

  /**
   * How fast this tier copies blocks: timed on one in {@value #TIMED_ONE_IN} of its {@link
   * #getInto} reads and of its {@link #put}s, which copy the same bytes the other way, and seeded
   * with the speed at which it zeroed its memory when built, so that a tier read only through
   * leases (which copy nothing) still has an estimate. Writers are not timed: their parts come at
   * the pace of their source.
   */
  @Override
  public LoadRate loadRate() {
    return loadRate;
  }

  @Override
  protected PutStatus store(BlockKey key, ByteBuffer src) {
    int length = src.remaining();
    // the copy is timed, not the allocation before it, which may wait for memory still being
    // reserved, or for evictions: a read waits for neither
    BlockWriter writer = openWriter(key, length);
    boolean timed = timed();
    long start = timed ? System.nanoTime() : 0;
    PutStatus status = AbstractBlockWriter.writeWhole(writer, src);
    if (timed && status == PutStatus.STORED) {
      loadRate.record(length, System.nanoTime() - start);
    }
    return status;
  }

  /**
   * A writer into memory reserved now at a bounded cost, for a caller that must not stall (an
   * event loop, where every connection it serves waits): a free run; compaction moving at most the
   * block's own length of other blocks, about what copying the block in costs; and eviction as
   * {@link #writer} does. Empty if that finds no room, where {@link #writer} would go on to compact
   * without a bound (moving up to the whole tier); then the caller opens that on a thread that may
   * take the time.
   */
  @Override
  public Optional<BlockWriter> tryWriter(BlockKey key, int length) {
    if (!takes(key, length)) {
      return Optional.of(BlockWriter.rejected(key, length, PutStatus.REJECTED_TOO_LARGE));
    }
    OffHeapBlock block = allocate(key, length, length, false);
    return block == null ? Optional.empty() : Optional.of(new RamWriter(this, key, block));
  }

  /**
   * A writer into memory reserved now, making room as {@link #put} does. The block's bytes are
   * copied straight into that memory, and their CRC32C computed slice by slice as they are copied,
   * which the block keeps ({@link BlockLease#crc32c()}); it joins the index, and the policy, on
   * commit.
   */
  @Override
  protected BlockWriter openWriter(BlockKey key, int length) {
    OffHeapBlock block = allocate(key, length, 4L * length, true);
    if (block == null) {
      counters().rejection();
      return BlockWriter.rejected(key, length, PutStatus.REJECTED_NO_SPACE);
    }
    return new RamWriter(this, key, block);
  }

  /** Publishes a block whose bytes are all written; the caller holds the writer's reference. */
  PutStatus publish(BlockKey key, OffHeapBlock block) {
    OffHeapBlock previous = index.put(key, block);
    if (previous != null) {
      previous.releaseOwner();
    }
    if (closed) {
      // close() ran while this block was written: take it back out unless its sweep did
      if (index.remove(key, block)) {
        block.releaseOwner();
      }
      block.release();
      throw new IllegalStateException("the RAM tier was closed during this put");
    }
    counters().put();
    boolean admitted = !block.isEvicted();
    block.release(); // the writer's reference; the index keeps its own
    if (admitted) {
      stored(key);
      if (block.isEvicted()) { // evicted since, and told before this store: tell it again
        removed(key);
      }
    }
    return admitted ? PutStatus.STORED : PutStatus.NOT_ADMITTED;
  }

  /**
   * Memory for a put of {@code key}, cheapest first: a free run; compaction within a budget of
   * {@code compactionBytes} moved (shared by all attempts of this put); evicting the policy's
   * coldest blocks of those the put may evict (its own namespace's, under quotas), up to four times the block's size, retrying after each; and, if room is still missing
   * while enough memory is free in total, compaction without a budget if {@code unboundedLast}.
   * Evicted blocks held by leases (or by the eviction listener) free nothing until closed, which is
   * why eviction is capped: a put never empties the tier in search of memory that leases pin.
   */
  private OffHeapBlock allocate(BlockKey key, int length, long compactionBytes,
      boolean unboundedLast) {
    OffHeapBlock block = memory.allocate(length, WRITER_AND_INDEX, CompactionBudget.NONE);
    if (block != null) {
      return block;
    }
    CompactionBudget budget = CompactionBudget.bounded(compactionBytes);
    long evictedBytes = 0;
    for (int attempt = 0; attempt < MAX_EVICTION_ATTEMPTS_PER_PUT; attempt++) {
      block = memory.allocate(length, WRITER_AND_INDEX, budget);
      if (block != null || evictedBytes >= 4L * length) {
        break;
      }
      long victimBytes = index.evictColdest(key);
      if (victimBytes < 0) {
        break;
      }
      evictedBytes += victimBytes;
    }
    return block != null || !unboundedLast
        ? block
        : memory.allocate(length, WRITER_AND_INDEX, CompactionBudget.unbounded());
  }

  /**
   * Drops the index's reference on a block the policy removed, handing it on first. The block is
   * marked evicted only after the listener returns, so a put that sees its own block evicted
   * ({@code NOT_ADMITTED}) also sees whatever the listener did with it.
   */
  private void onEvicted(BlockKey key, OffHeapBlock block) {
    counters().eviction();
    try {
      if (evictionListener != null && block.tryRetain()) {
        counters().leaseOpened();
        handOff(new RamLease(this, key, block));
      }
    } finally {
      block.markEvicted();
      block.releaseOwner();
    }
    removed(key); // after the mark, which a put that is telling its store looks at afterwards
  }

  /**
   * Gives the listener its lease. If the listener throws, the failure is logged and the lease is
   * left to it: closing it here could release memory the listener already handed on, whose buffer
   * would then show reused bytes to the next tier. A listener that loses a lease leaks its memory
   * (visible as {@code leasesOpen}), never corrupts it.
   */
  private void handOff(RamLease lease) {
    try {
      evictionListener.onEvicted(lease);
    } catch (RuntimeException e) {
      log.error("eviction listener failed on block {}; the lease stays with the listener",
          lease.key(), e);
    }
  }

  /** False: a read only copies memory (or leases it). */
  @Override
  public boolean readsMayWait() {
    return false;
  }

  @Override
  protected BlockLease lease(BlockKey key) {
    OffHeapBlock block = index.get(key);
    if (block == null || !block.tryRetain()) {
      counters().miss();
      return BlockLease.miss(key);
    }
    counters().hit();
    counters().leaseOpened();
    return new RamLease(this, key, block);
  }

  /**
   * As {@link #get}, for a thread that must not wait (a server's event loop): a hit or a miss,
   * or empty while compaction moves the block, when {@link #get} would wait for the move (a copy
   * of up to the block's length).
   */
  @Override
  public Optional<BlockLease> tryGet(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    OffHeapBlock block = index.get(key);
    OffHeapBlock.Retained retained =
        block == null ? OffHeapBlock.Retained.FREED : block.tryRetainUnlessMoving();
    if (retained == OffHeapBlock.Retained.MOVING) {
      return Optional.empty();
    }
    if (retained == OffHeapBlock.Retained.FREED) {
      counters().miss();
      return Optional.of(BlockLease.miss(key));
    }
    counters().hit();
    counters().leaseOpened();
    return Optional.of(new RamLease(this, key, block));
  }

  /**
   * A lease on the block stored under {@code key} that counts no read and leaves the eviction
   * policy's ranking as it was: for copying a block RAM keeps to another tier. A miss lease if
   * there is none.
   */
  public BlockLease peek(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    OffHeapBlock block = index.peek(key);
    if (block == null || !block.tryRetain()) {
      return BlockLease.miss(key);
    }
    counters().leaseOpened();
    return new RamLease(this, key, block);
  }

  @Override
  protected GetStatus copyInto(BlockKey key, ByteBuffer dst) {
    OffHeapBlock block = index.get(key);
    if (block == null || !block.tryRetain()) {
      counters().miss();
      return GetStatus.MISS;
    }
    try {
      if (dst.remaining() < block.length()) {
        return GetStatus.BUFFER_TOO_SMALL;
      }
      boolean timed = timed();
      long start = timed ? System.nanoTime() : 0;
      block.copyTo(dst);
      if (timed) {
        loadRate.record(block.length(), System.nanoTime() - start);
      }
      counters().hit();
      return GetStatus.HIT;
    } finally {
      block.release();
    }
  }

  /**
   * Whether to time this copy: one in {@value #TIMED_ONE_IN}, so that the clock and the rate's
   * lock cost the copies of small blocks nothing visible, and the rate still follows within a few
   * hundred copies.
   */
  private static boolean timed() {
    return ThreadLocalRandom.current().nextInt(TIMED_ONE_IN) == 0;
  }

  /** As {@link Tier#locatePrefix}, estimated for the blocks' own lengths. */
  @Override
  protected PrefixLocation locate(List<BlockKey> keys) {
    int blocks = 0;
    long bytes = 0;
    for (BlockKey key : keys) {
      OffHeapBlock block = index.peek(Objects.requireNonNull(key, "key"));
      if (block == null) {
        break;
      }
      blocks++;
      bytes += block.length();
    }
    return PrefixLocation.of(name(), blocks, loadRate.estimate(blocks, bytes));
  }

  @Override
  protected boolean holds(BlockKey key) {
    return index.containsKey(key);
  }

  @Override
  protected boolean remove(BlockKey key) {
    OffHeapBlock block = index.remove(key);
    if (block == null) {
      return false;
    }
    counters().delete();
    block.releaseOwner();
    removed(key);
    return true;
  }

  /**
   * Hands every block to {@code action}, hottest first by the eviction policy's ranking, as a
   * lease (with the block's CRC32C) valid only during the call, closed after it; blocks put or
   * removed meanwhile may or may not be seen. Counts no reads: for moving the tier's contents
   * elsewhere, such as to a lower tier before a planned shutdown.
   */
  public void forEachHottestFirst(Consumer<BlockLease> action) {
    Objects.requireNonNull(action, "action");
    ensureOpen();
    Map<BlockKey, OffHeapBlock> hottest = index.hottestFirst();
    for (Map.Entry<BlockKey, OffHeapBlock> e : hottest.entrySet()) {
      OffHeapBlock block = e.getValue();
      if (block.tryRetain()) {
        counters().leaseOpened();
        try (RamLease lease = new RamLease(this, e.getKey(), block)) {
          action.accept(lease);
        }
      }
    }
  }

  /** RAM keeps blocks as they are: it has no salt to destroy. */
  @Override
  public boolean shredNamespace(Namespace namespace) {
    return false;
  }

  /** Removes the namespace's blocks; leases still open keep their memory until closed. */
  @Override
  public Map<String, Long> removeNamespace(Namespace namespace) {
    Objects.requireNonNull(namespace, "namespace");
    ensureOpen();
    long removed = 0;
    for (BlockKey key : index.keys()) {
      if (namespace.equals(key.namespace().orElse(null)) && remove(key)) {
        removed++;
      }
    }
    return Map.of(name(), removed);
  }

  /**
   * The bytes of blocks (in whole granules) that count against {@code namespace}'s quota: its
   * own, if it has one ({@link RamTierConfig#quotas()}); otherwise those of every namespace
   * without one, which share what the quotas leave.
   */
  public long usedBytesOf(Namespace namespace) {
    return index instanceof PartitionedRamIndex p ? p.bytesOf(namespace) : index.bytes();
  }

  /** Reports its reads and bytes, as every tier does, and its quotas ({@link #describeQuotas}). */
  @Override
  public void describe(TierVisitor visitor, LongSupplier hits) {
    visitor.hits(name(), hits);
    visitor.bytes(name(), () -> stats().bytesUsed(), () -> stats().capacityBytes());
    describeQuotas(visitor);
  }

  /**
   * Reports each RAM quota ({@link RamTierConfig#quotas()}) to {@code visitor}, as {@link
   * QuotaGauges} says, tagged {@code tier=ram}. Nothing without quotas.
   */
  public void describeQuotas(TierVisitor visitor) {
    QuotaGauges.describe(visitor, name(), config.quotas(), this::usedBytesOf);
  }

  @Override
  public CacheStats stats() {
    return counters().snapshot(index.size(), memory.usedBytes(), memory.capacityBytes(),
        memory.compactions(), memory.bytesCompacted());
  }

  /**
   * Drops every block. Calls that start afterwards throw {@link IllegalStateException}; a put
   * running concurrently either completes before the sweep or throws; leases still open keep their
   * blocks' memory until closed.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (BlockKey key : index.keys()) {
      OffHeapBlock block = index.remove(key);
      if (block != null) {
        block.releaseOwner();
      }
    }
    index.cleanUp();
    memory.close();
  }

  void leaseClosed() {
    counters().leaseClosed();
  }

  @Override
  protected void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("the RAM tier is closed");
    }
  }

  @Override
  public String toString() {
    return "RamTier[capacity=" + memory.capacityBytes() + ", used=" + memory.usedBytes()
        + ", blocks=" + index.size() + "]";
  }
}
