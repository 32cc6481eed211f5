package dev.kvcache.tiered;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.BlockWriter;
import dev.kvcache.CacheStats;
import dev.kvcache.GetStatus;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.spi.AbstractBlockWriter;
import dev.kvcache.spi.PutChecks;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierCounters;
import dev.kvcache.tiered.TieredRead.Source;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An off-heap RAM tier over a lower tier (the disk tier, or a remote one), behind one {@link
 * dev.kvcache.KvCache}.
 *
 * <p><b>Where a block is.</b> Puts go to RAM. Blocks RAM's policy evicts are handed, still pinned
 * in RAM, to a bounded spill queue; one spill thread writes them to the lower tier in eviction
 * order. Waiting blocks pin at most a quarter of RAM (and at most {@link
 * TieredCacheConfig#spillQueueBlocks()} blocks), so puts keep finding room. While a block waits,
 * reads find it in the queue's index, so a block is findable in some tier from the moment its put
 * returns until it is dropped: by the lower tier's own eviction, or because the queue was full
 * when RAM evicted it ({@link TieredStats#spillDrops()}). Reads look in RAM, then the queue, then
 * the lower tier; a lower-tier hit is copied into RAM (promotion) when {@link
 * TieredCacheConfig#promoteOnLowerHit()} is set and the queue has room. A promoted block that is
 * not put again is not written again when RAM evicts it: the lower tier still has it.
 *
 * <p><b>Never stale bytes.</b> A put or delete of a key first removes the key's older copies
 * everywhere: it deletes the old copy from RAM (a delete, not an eviction, so it is not spilled),
 * cancels its queued spill (or waits for a spill write of that key under way to end), and deletes
 * it from the lower tier; only then does a put store the new bytes, so every spill of the key
 * after that carries them. RAM runs its eviction listener atomically with the removal, so an
 * eviction of the old copy has queued it before the delete, or does not happen. A read concurrent
 * with a put of the same key may miss. Puts, deletes and promotions of one key are serialised by a
 * lock stripe; spill writes take no lock. A promotion carries the stripe's generation from before
 * its read: if a put or delete of a key in the stripe came in between, the bytes read may be older
 * than RAM's and are not promoted.
 *
 * <p><b>Threads.</b> All methods are thread-safe. RAM evictions run on the thread of the put that
 * causes them and never wait: a full queue drops the block instead. To keep that rare, a put that
 * finds the queue more than half full, or RAM's memory pinned by waiting blocks, first waits for
 * the spill thread, up to {@link TieredCacheConfig#spillQueueWait()}.
 */
public final class TieredCache implements Tier {

  private static final Logger log = LoggerFactory.getLogger(TieredCache.class);
  private static final int STRIPES = 256;
  /** The spill queue pins at most this fraction (1/n) of RAM. */
  private static final int SPILL_QUEUE_RAM_SHARE = 4;
  private static final int MAX_RAM_PUT_RETRIES = 8;
  /** Longest single wait for spill progress: a notification missed costs no more than this. */
  private static final long SPILL_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

  private final RamTier ram;
  private final Tier lower;
  private final TieredCacheConfig config;
  private final ArrayBlockingQueue<SpillEntry> queue;
  /** Blocks waiting in the queue (or being written), by key. */
  private final ConcurrentHashMap<BlockKey, SpillEntry> spilling = new ConcurrentHashMap<>();
  /** Keys promoted from the lower tier and not put or deleted since: the lower copy is current. */
  private final Set<BlockKey> clean = ConcurrentHashMap.newKeySet();
  /** RAM bytes the blocks in {@link #spilling} keep pinned, and the most they may. */
  private final AtomicLong queuedBytes = new AtomicLong();
  private final long maxQueuedBytes;
  /**
   * Set on a put's thread once it has waited for the spill thread as long as it may: from then on
   * the blocks it evicts past the queue's byte bound are dropped.
   */
  private final ThreadLocal<Boolean> pastSpillWait = ThreadLocal.withInitial(() -> false);
  /** Notified each time a spill ends, for puts waiting for room in the queue. */
  private final Object spillProgress = new Object();
  private final Object[] stripes = new Object[STRIPES];
  private final AtomicLongArray generations = new AtomicLongArray(STRIPES);
  private final Thread spiller;
  private volatile boolean closed;

  private final TierCounters counters = new TierCounters();
  private final LongAdder ramHits = new LongAdder();
  private final LongAdder spillHits = new LongAdder();
  private final LongAdder lowerHits = new LongAdder();
  private final LongAdder spills = new LongAdder();
  private final LongAdder spillsSkipped = new LongAdder();
  private final LongAdder spillDrops = new LongAdder();
  private final LongAdder promotions = new LongAdder();

  /**
   * A RAM tier of {@code ramConfig} over {@code lower}, which the cache now owns: closing the cache
   * closes it.
   *
   * @throws IllegalStateException if the JVM cannot reserve the RAM tier's direct memory
   */
  public TieredCache(RamTierConfig ramConfig, Tier lower, TieredCacheConfig config) {
    this.lower = Objects.requireNonNull(lower, "lower");
    this.config = Objects.requireNonNull(config, "config");
    for (int i = 0; i < STRIPES; i++) {
      stripes[i] = new Object();
    }
    this.queue = new ArrayBlockingQueue<>(config.spillQueueBlocks());
    this.ram = new RamTier(ramConfig, this::onRamEviction);
    this.maxQueuedBytes = ram.capacityBytes() / SPILL_QUEUE_RAM_SHARE;
    this.spiller = new Thread(this::spillLoop, "kvcache-spill-" + lower.name());
    spiller.setDaemon(true);
    spiller.start();
  }

  @Override
  public String name() {
    return "ram+" + lower.name();
  }

  /** The sum of the tiers' budgets. */
  @Override
  public long capacityBytes() {
    return ram.capacityBytes() + lower.capacityBytes();
  }

  /** The larger of the tiers' limits: a block too large for RAM goes straight to the lower tier. */
  @Override
  public int maxBlockBytes() {
    return Math.max(ram.maxBlockBytes(), lower.maxBlockBytes());
  }

  // ---------------------------------------------------------------- writes

  @Override
  public PutStatus put(BlockKey key, ByteBuffer src) {
    Objects.requireNonNull(src, "src");
    if (!takes(key, src.remaining())) {
      return PutStatus.REJECTED_TOO_LARGE;
    }
    BlockWriter inRam = reserveInRam(key, src.remaining());
    if (inRam == null) {
      return commit(key, false, () -> lower.put(key, src));
    }
    try (inRam) {
      inRam.write(src.duplicate());
      return commit(key, true, inRam::commit);
    }
  }

  /**
   * A writer into RAM, which makes room as a put does, or into the lower tier when RAM cannot take
   * the block. Opening it already removes the key's copy from RAM; the lower tier's copy stays
   * readable until the commit.
   */
  @Override
  public BlockWriter writer(BlockKey key, int length) {
    if (!takes(key, length)) {
      return BlockWriter.rejected(key, length, PutStatus.REJECTED_TOO_LARGE);
    }
    BlockWriter inRam = reserveInRam(key, length);
    BlockWriter inner = inRam != null ? inRam : lower.writer(key, length);
    if (inner.rejection().isPresent()) {
      counters.rejection();
      return inner;
    }
    return new TieredWriter(key, inner, inRam != null);
  }

  /**
   * A writer into RAM, if the block goes there and RAM has room now without waiting for the spill
   * thread; empty otherwise. Opening it removes the key's copy from RAM, as {@link #writer} does.
   */
  @Override
  public Optional<BlockWriter> tryWriter(BlockKey key, int length) {
    if (!takes(key, length)) {
      return Optional.of(BlockWriter.rejected(key, length, PutStatus.REJECTED_TOO_LARGE));
    }
    if (length > ram.maxBlockBytes() || !spillRoom(length)) {
      return Optional.empty();
    }
    dropOldCopy(key);
    BlockWriter inRam = ram.writer(key, length);
    return inRam.rejection().isPresent()
        ? Optional.empty()
        : Optional.of(new TieredWriter(key, inRam, true));
  }

  /**
   * Checks a block about to be put; false, counted as a rejection, if it is larger than both
   * tiers' largest.
   *
   * @throws IllegalArgumentException if {@code length} is not positive
   */
  private boolean takes(BlockKey key, int length) {
    ensureOpen();
    return PutChecks.fits(key, length, maxBlockBytes(), counters);
  }

  /**
   * Room in RAM for a block about to be put, or null if it goes to the lower tier: it is larger
   * than RAM's largest, or RAM is pinned full by leases. The key's copy leaves RAM and the spill
   * queue first, so that room is not spent on bytes about to be replaced.
   */
  private BlockWriter reserveInRam(BlockKey key, int length) {
    boolean fits = length <= ram.maxBlockBytes();
    if (fits) {
      awaitSpillRoom(length);
    }
    dropOldCopy(key);
    if (!fits) {
      return null;
    }
    BlockWriter writer = openInRam(key, length);
    return writer.rejection().isPresent() ? null : writer;
  }

  /** Removes the key's copy from RAM and from the spill queue (waiting out a spill under way). */
  private void dropOldCopy(BlockKey key) {
    int stripe = stripe(key);
    synchronized (stripes[stripe]) {
      generations.incrementAndGet(stripe);
      clean.remove(key);
      ram.delete(key);
      cancelSpill(key);
      generations.incrementAndGet(stripe);
    }
  }

  /**
   * Publishes a written block: the key's other copies leave every tier (the old copy leaves RAM
   * without an eviction, so every spill of this key from now on carries the new bytes; a spill of
   * the old one is cancelled or waited out), then the tier written to stores the new one.
   */
  private PutStatus commit(BlockKey key, boolean inRam, Supplier<PutStatus> store) {
    int stripe = stripe(key);
    PutStatus status;
    synchronized (stripes[stripe]) {
      generations.incrementAndGet(stripe);
      clean.remove(key);
      ram.delete(key);
      cancelSpill(key);
      if (inRam) {
        lower.delete(key);
        status = store.get();
        if (status == PutStatus.NOT_ADMITTED
            && (spilling.containsKey(key) || lower.contains(key))) {
          status = PutStatus.STORED; // RAM's policy passed it straight on to the lower tier
        }
      } else {
        status = store.get();
      }
      generations.incrementAndGet(stripe); // see promote(): also after the tiers changed
    }
    if (status == PutStatus.STORED || status == PutStatus.NOT_ADMITTED) {
      counters.put();
    } else {
      counters.rejection();
    }
    return status;
  }

  /** A block being written into the tier that will hold it. */
  private final class TieredWriter extends AbstractBlockWriter {
    private final BlockWriter inner;
    private final boolean inRam;

    TieredWriter(BlockKey key, BlockWriter inner, boolean inRam) {
      super(key, inner.length());
      this.inner = inner;
      this.inRam = inRam;
    }

    @Override
    protected void copyIn(ByteBuffer src, int offset) {
      inner.write(src.duplicate()); // parts arrive in order: the inner writer is at offset
    }

    @Override
    protected PutStatus publish() {
      try {
        return TieredCache.this.commit(key(), inRam, inner::commit);
      } finally {
        inner.close(); // nothing more after a commit; frees the room if the commit never ran
      }
    }

    @Override
    protected void discard() {
      inner.close();
    }
  }

  /**
   * Waits, up to the configured time, until the spill queue is at most half full, in blocks and in
   * bytes counting {@code bytes} more: the other half takes what this put evicts (usually about
   * its own size; more when RAM's free memory is fragmented) without dropping it.
   */
  private void awaitSpillRoom(int bytes) {
    if (spillRoom(bytes) || config.spillQueueWait().isZero()) {
      return;
    }
    long deadline = System.nanoTime() + config.spillQueueWait().toNanos();
    while (!spillRoom(bytes) && awaitSpillProgress(deadline)) {
      // each spill that ends may have made room
    }
  }

  private boolean spillRoom(int bytes) {
    long queued = queuedBytes.get();
    return queue.size() * 2 < config.spillQueueBlocks()
        && (queued == 0 || (queued + bytes) * 2 <= maxQueuedBytes);
  }

  /**
   * RAM's writer, reopened while it found no room only because the blocks it evicted went to the
   * spill queue, which keeps their memory pinned until written. Until then its victims join the
   * queue even past the queue's byte bound: evicting frees nothing at once, so dropping them would
   * lose blocks for no room. It waits for the spill thread to write some (up to {@link
   * TieredCacheConfig#spillQueueWait()}); after that it evicts further, and victims past the byte
   * bound are dropped and free their memory. What then still finds no room is pinned by leases.
   */
  private BlockWriter openInRam(BlockKey key, int length) {
    long deadline = System.nanoTime() + config.spillQueueWait().toNanos();
    BlockWriter writer = ram.writer(key, length);
    while (writer.rejection().isPresent() && queuedBytes.get() > 0
        && awaitSpillProgress(deadline)) {
      writer = ram.writer(key, length);
    }
    if (writer.rejection().isEmpty()) {
      return writer;
    }
    pastSpillWait.set(true);
    try {
      long queuedBefore = 0;
      for (int retry = 0; retry < MAX_RAM_PUT_RETRIES && writer.rejection().isPresent()
          && queuedBefore < maxQueuedBytes; retry++) {
        queuedBefore = queuedBytes.get();
        writer = ram.writer(key, length);
      }
    } finally {
      pastSpillWait.set(false);
    }
    return writer;
  }

  /**
   * Waits until a spill ends or a few milliseconds pass, unless {@code deadline} has passed.
   *
   * @return false once the deadline has passed (or the thread is interrupted)
   */
  private boolean awaitSpillProgress(long deadline) {
    long left = deadline - System.nanoTime();
    if (left <= 0 || closed) {
      return false;
    }
    synchronized (spillProgress) {
      try {
        TimeUnit.NANOSECONDS.timedWait(spillProgress, Math.min(left, SPILL_POLL_NANOS));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return true;
  }

  @Override
  public boolean delete(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    int stripe = stripe(key);
    boolean removed;
    synchronized (stripes[stripe]) {
      generations.incrementAndGet(stripe);
      clean.remove(key);
      removed = ram.delete(key);
      removed |= cancelSpill(key);
      removed |= lower.delete(key);
      generations.incrementAndGet(stripe);
    }
    if (removed) {
      counters.delete();
    }
    return removed;
  }

  /** Cancels a queued spill of the key, or waits for one being written to end. */
  private boolean cancelSpill(BlockKey key) {
    SpillEntry queued = spilling.remove(key);
    if (queued != null) {
      queued.cancel();
      return true;
    }
    return false;
  }

  // ---------------------------------------------------------------- reads

  @Override
  public BlockLease get(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    BlockLease above = leaseAbove(key);
    if (above != null) {
      return above;
    }
    int stripe = stripe(key);
    long generation = generations.get(stripe);
    BlockLease fromLower = lower.get(key);
    if (fromLower.status() != GetStatus.HIT) {
      counters.miss();
      return BlockLease.miss(key);
    }
    lowerHits.increment();
    promote(key, fromLower.bytes(), stripe, generation);
    return opened(TieredLease.over(fromLower, counters::leaseClosed));
  }

  /** A lease on the key's copy in RAM or in the spill queue, counted as a hit; or null. */
  private BlockLease leaseAbove(BlockKey key) {
    BlockLease fromRam = ram.get(key);
    if (fromRam.status() == GetStatus.HIT) {
      ramHits.increment();
      return opened(TieredLease.over(fromRam, counters::leaseClosed));
    }
    SpillEntry queued = spilling.get(key);
    if (queued != null && queued.tryRetain()) {
      spillHits.increment();
      return opened(new TieredLease(key, queued.bytes(), queued::release));
    }
    return null;
  }

  private BlockLease opened(BlockLease lease) {
    counters.hit();
    counters.leaseOpened();
    return lease;
  }

  @Override
  public GetStatus getInto(BlockKey key, ByteBuffer dst) {
    return read(key, dst).status();
  }

  /**
   * Copies each block into the buffer at the same index, as {@link #getInto} does. The blocks
   * neither RAM nor the spill queue holds are read from the lower tier in one {@link
   * Tier#getAllInto} call, which a remote tier answers in batches.
   *
   * @return the status of each block, in order
   * @throws IllegalArgumentException if the lists differ in size
   */
  @Override
  public GetStatus[] getAllInto(List<BlockKey> keys, List<ByteBuffer> dsts) {
    TieredRead[] reads = readAllInto(keys, dsts);
    GetStatus[] result = new GetStatus[reads.length];
    for (int i = 0; i < reads.length; i++) {
      result[i] = reads[i].status();
    }
    return result;
  }

  /**
   * Copies each block into the buffer at the same index, as {@link #getAllInto} does, and tells
   * which tier served it.
   *
   * @return each block's status and source, in order
   * @throws IllegalArgumentException if the lists differ in size
   */
  public TieredRead[] readAllInto(List<BlockKey> keys, List<ByteBuffer> dsts) {
    Objects.requireNonNull(keys, "keys");
    Objects.requireNonNull(dsts, "dsts");
    if (keys.size() != dsts.size()) {
      throw new IllegalArgumentException(
          keys.size() + " keys but " + dsts.size() + " destination buffers");
    }
    TieredRead[] result = new TieredRead[keys.size()];
    List<Integer> fromLower = new ArrayList<>();
    long[] generation = new long[keys.size()];
    int[] start = new int[keys.size()];
    for (int i = 0; i < result.length; i++) {
      result[i] = readAbove(keys.get(i), dsts.get(i));
      if (result[i] == null) {
        fromLower.add(i);
        generation[i] = generations.get(stripe(keys.get(i)));
        start[i] = dsts.get(i).position();
      }
    }
    if (fromLower.isEmpty()) {
      return result;
    }
    List<BlockKey> lowerKeys = new ArrayList<>(fromLower.size());
    List<ByteBuffer> lowerDsts = new ArrayList<>(fromLower.size());
    for (int i : fromLower) {
      lowerKeys.add(keys.get(i));
      lowerDsts.add(dsts.get(i));
    }
    GetStatus[] statuses = lower.getAllInto(lowerKeys, lowerDsts);
    for (int j = 0; j < statuses.length; j++) {
      int i = fromLower.get(j);
      result[i] = fromLower(keys.get(i), dsts.get(i), statuses[j], start[i], generation[i]);
    }
    return result;
  }

  private TieredRead read(BlockKey key, ByteBuffer dst) {
    TieredRead above = readAbove(key, dst);
    if (above != null) {
      return above;
    }
    long generation = generations.get(stripe(key));
    int start = dst.position();
    return fromLower(key, dst, lower.getInto(key, dst), start, generation);
  }

  /** A read served by RAM or the spill queue; null if the block is in neither. */
  private TieredRead readAbove(BlockKey key, ByteBuffer dst) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(dst, "dst");
    ensureOpen();
    if (dst.isReadOnly()) {
      throw new ReadOnlyBufferException();
    }
    GetStatus status = ram.getInto(key, dst);
    if (status != GetStatus.MISS) {
      return counted(status, Source.RAM, ramHits);
    }
    SpillEntry queued = spilling.get(key);
    if (queued != null && queued.tryRetain()) {
      try {
        ByteBuffer bytes = queued.bytes();
        if (dst.remaining() < bytes.remaining()) {
          return counted(GetStatus.BUFFER_TOO_SMALL, Source.SPILL_QUEUE, spillHits);
        }
        dst.put(bytes);
        return counted(GetStatus.HIT, Source.SPILL_QUEUE, spillHits);
      } finally {
        queued.release();
      }
    }
    return null;
  }

  /**
   * A read the lower tier answered into {@code dst} from {@code start}; a hit is promoted unless
   * the key's stripe changed since {@code generation}, taken before the lower tier was asked.
   */
  private TieredRead fromLower(BlockKey key, ByteBuffer dst, GetStatus status, int start,
      long generation) {
    if (status == GetStatus.HIT) {
      promote(key, dst.duplicate().flip().position(start), stripe(key), generation);
    }
    return counted(status, Source.LOWER, lowerHits);
  }

  private TieredRead counted(GetStatus status, Source source, LongAdder tierHits) {
    if (status == GetStatus.HIT) {
      tierHits.increment();
      counters.hit();
    } else if (status == GetStatus.MISS) {
      counters.miss();
      source = Source.NONE;
    }
    return new TieredRead(status, source);
  }

  /**
   * Copies a block read from the lower tier into RAM, unless the policy says no, the spill queue is
   * more than half full (the blocks the copy evicts could be dropped), RAM has the key already, or
   * a put or delete in its stripe since {@code generation} may have made it stale. Puts and deletes
   * bump the generation both before and after they change the tiers, so a read that took the
   * generation while one was under way (and may have read the lower tier before it deleted the
   * key there) finds it changed.
   */
  private void promote(BlockKey key, ByteBuffer bytes, int stripe, long generation) {
    if (!config.promoteOnLowerHit() || bytes.remaining() > ram.maxBlockBytes()
        || !spillRoom(bytes.remaining())) {
      return; // a promotion evicts: it must not push blocks out of a full spill queue
    }
    synchronized (stripes[stripe]) {
      if (generations.get(stripe) != generation || closed || ram.contains(key)) {
        return;
      }
      clean.add(key); // before the put: RAM may evict the copy at once, and need not spill it
      if (ram.put(key, bytes) == PutStatus.STORED) {
        promotions.increment();
      } else {
        clean.remove(key);
      }
    }
  }

  @Override
  public boolean contains(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    return ram.contains(key) || spilling.containsKey(key) || lower.contains(key);
  }

  /**
   * How many leading keys some tier holds. Each run of keys that neither RAM nor the spill queue
   * holds is looked up in the lower tier with one {@link Tier#lookupPrefix} call, which a remote
   * tier answers with one request per server instead of one per key. The key that ends the lower
   * tier's prefix is looked for in RAM and the queue only.
   */
  @Override
  public int lookupPrefix(List<BlockKey> keys) {
    Objects.requireNonNull(keys, "keys");
    ensureOpen();
    int n = 0;
    int lowerLacks = -1; // the key the lower tier's last answer stopped at
    while (n < keys.size()) {
      BlockKey key = keys.get(n);
      if (ram.contains(key) || spilling.containsKey(key)) {
        n++;
        continue;
      }
      if (n == lowerLacks) {
        break;
      }
      int below = lower.lookupPrefix(keys.subList(n, keys.size()));
      if (below == 0) {
        break;
      }
      n += below;
      lowerLacks = n;
    }
    return n;
  }

  /**
   * Pins the leading keys some tier holds, as {@link #lookupPrefix} finds them: copies in RAM or
   * in the spill queue under leases, and each run of keys these lack with one {@link
   * Tier#pinPrefix} call to the lower tier, which keeps those blocks in its own way (a remote tier
   * under its servers' leases, fetching a block only when it is read). A block read through the
   * lower tier's pin is promoted into RAM as {@link #get} promotes a lower-tier hit, unless a put
   * or delete in its stripe came after the pin. Each pinned block counts as a hit in its tier, the
   * first key not found as a miss.
   *
   * @throws IllegalArgumentException if {@code timeout} is not positive
   */
  @Override
  public PrefixPin pinPrefix(List<BlockKey> keys, Duration timeout) {
    Objects.requireNonNull(keys, "keys");
    PrefixPin.requirePositive(timeout);
    ensureOpen();
    long[] before = new long[STRIPES]; // a put or delete after this makes a pinned copy stale
    for (int i = 0; i < STRIPES; i++) {
      before[i] = generations.get(i);
    }
    TieredPin pinned = new TieredPin((key, bytes) -> {
      int stripe = stripe(key);
      promote(key, bytes, stripe, before[stripe]);
    });
    try {
      int n = 0;
      int lowerLacks = -1; // the key the lower tier's last pin stopped at
      while (n < keys.size()) {
        BlockLease above = leaseAbove(keys.get(n));
        if (above != null) {
          pinned.add(above);
          n++;
          continue;
        }
        if (n == lowerLacks) {
          break;
        }
        PrefixPin below = lower.pinPrefix(keys.subList(n, keys.size()), timeout);
        if (below.blocks() == 0) {
          below.close();
          break;
        }
        pinned.add(below);
        lowerHits.add(below.blocks());
        for (int i = 0; i < below.blocks(); i++) {
          counters.hit();
        }
        n += below.blocks();
        lowerLacks = n;
      }
      if (n < keys.size()) {
        counters.miss();
      }
      return PrefixPin.over(pinned, timeout);
    } catch (RuntimeException | Error e) {
      pinned.release();
      throw e;
    }
  }

  // ---------------------------------------------------------------- spilling

  /** RAM's eviction listener: on the evicting thread, must not wait. */
  private void onRamEviction(BlockLease lease) {
    BlockKey key = lease.key();
    if (clean.remove(key) && !closed && lower.contains(key)) {
      spillsSkipped.increment();
      lease.close();
      return;
    }
    SpillEntry entry = new SpillEntry(lease);
    long queuedBefore = queuedBytes.getAndAdd(entry.size());
    if (closed && config.spillOnClose()) {
      // the spill thread is stopping; close() writes what RAM holds, and a block the policy evicts
      // meanwhile (Caffeine may finish pending maintenance inside the snapshot close iterates)
      // is written here, on the thread that evicted it
      spill(entry);
      return;
    }
    if (closed) {
      dropped(entry, "the cache is closing");
      return;
    }
    if (queuedBefore > 0 && queuedBefore + entry.size() > maxQueuedBytes
        && (pastSpillWait.get() || config.spillQueueWait().isZero())) {
      dropped(entry, "the spill queue holds " + queuedBefore + " of its " + maxQueuedBytes + " bytes");
      return;
    }
    SpillEntry older = spilling.put(key, entry);
    if (older != null) {
      older.cancel(); // cannot happen while puts cancel spills; kept for safety
    }
    if (!queue.offer(entry)) {
      spilling.remove(key, entry);
      dropped(entry, "the spill queue holds its " + config.spillQueueBlocks() + " blocks");
    }
  }

  private void dropped(SpillEntry entry, String why) {
    spillDrops.increment();
    queuedBytes.addAndGet(-entry.size());
    log.debug("dropped {} on its way to the {} tier: {}", entry.lease().key(), lower.name(), why);
    entry.release();
  }

  private void spillLoop() {
    while (true) {
      SpillEntry entry;
      try {
        entry = queue.poll(100, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        return;
      }
      if (entry == null) {
        if (closed) {
          return;
        }
        continue;
      }
      spill(entry);
    }
  }

  /**
   * Writes a block to the lower tier, unless a put or delete of its key cancelled it first; one
   * that comes while the write is under way waits for it, then deletes or overwrites what it wrote.
   */
  private void spill(SpillEntry entry) {
    BlockKey key = entry.lease().key();
    try {
      if (!entry.startWriting()) {
        return;
      }
      PutStatus status = lower.put(key, entry.bytes());
      if (status == PutStatus.STORED) {
        spills.increment();
      } else {
        spillDrops.increment();
        log.debug("dropped {}: the {} tier answered {}", key, lower.name(), status);
      }
    } catch (RuntimeException e) {
      spillDrops.increment();
      log.warn("spill of {} to the {} tier failed: {}", key, lower.name(), e.toString());
    } finally {
      spilling.remove(key, entry);
      queuedBytes.addAndGet(-entry.size());
      entry.finishWriting();
      entry.release();
      synchronized (spillProgress) {
        spillProgress.notifyAll();
      }
    }
  }

  /**
   * Waits until every block RAM has evicted so far is written to the lower tier or dropped (for a
   * planned hand-over, or tests).
   *
   * @return false if blocks were still waiting after {@code timeout}
   */
  public boolean awaitSpills(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!spilling.isEmpty()) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(1);
    }
    return true;
  }

  // ---------------------------------------------------------------- stats and close

  /** How blocks moved between the tiers. */
  public TieredStats tieredStats() {
    return new TieredStats(ramHits.sum(), spillHits.sum(), lowerHits.sum(),
        stats().misses(), spills.sum(), spillsSkipped.sum(),
        spillDrops.sum(), promotions.sum());
  }

  /** The RAM tier's own counters. */
  public CacheStats ramStats() {
    return ram.stats();
  }

  /** The lower tier's own counters. */
  public CacheStats lowerStats() {
    return lower.stats();
  }

  /**
   * The whole cache: reads, puts and deletes as the caller made them; evictions are blocks that
   * left the last tier or were dropped on the way to it; {@code blocks} counts a promoted block in
   * both tiers; bytes and capacity are the tiers' sums.
   */
  @Override
  public CacheStats stats() {
    CacheStats r = ram.stats();
    CacheStats l = lower.stats();
    CacheStats own = counters.snapshot(r.blocks() + spilling.size() + l.blocks(),
        r.bytesUsed() + l.bytesUsed(), r.capacityBytes() + l.capacityBytes(),
        r.compactions() + l.compactions(), r.bytesCompacted() + l.bytesCompacted());
    return new CacheStats(own.hits(), own.misses(), own.puts(), l.evictions() + spillDrops.sum(),
        own.rejections(), own.deletes(), own.blocks(), own.bytesUsed(), own.capacityBytes(),
        own.leasesOpen(), own.compactions(), own.bytesCompacted());
  }

  /**
   * Writes the blocks waiting in the spill queue to the lower tier, then, if {@link
   * TieredCacheConfig#spillOnClose()}, the blocks RAM holds, then closes both tiers; the lower tier
   * keeps what it persists. Leases still open stay readable until closed. Closing twice does
   * nothing.
   */
  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    try {
      spiller.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    for (SpillEntry left; (left = queue.poll()) != null; ) {
      spill(left); // offered after the spill thread stopped
    }
    if (config.spillOnClose()) {
      spillRam();
    }
    ram.close();
    lower.close();
  }

  /** Writes RAM's blocks to the lower tier, hottest first, skipping those it holds unchanged. */
  private void spillRam() {
    long start = System.nanoTime();
    long[] written = {0, 0};
    try {
      ram.forEachHottestFirst((key, bytes) -> {
        if (clean.contains(key) && lower.contains(key)) {
          return;
        }
        if (lower.put(key, bytes) == PutStatus.STORED) {
          written[0]++;
          written[1] += bytes.remaining();
        }
      });
    } catch (RuntimeException e) {
      log.warn("writing RAM's blocks to the {} tier on close stopped: {}", lower.name(), e.toString());
    }
    log.info("wrote {} blocks ({} MiB) from RAM to the {} tier on close in {} ms", written[0],
        written[1] >> 20, lower.name(), (System.nanoTime() - start) / 1_000_000);
  }

  private static int stripe(BlockKey key) {
    return (int) (key.lo() & (STRIPES - 1));
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("the tiered cache is closed");
    }
  }

  @Override
  public String toString() {
    return "TieredCache[" + ram + " over " + lower + "]";
  }
}
