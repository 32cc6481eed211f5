package dev.kvcache.tiered;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.BlockWriter;
import dev.kvcache.GetStatus;
import dev.kvcache.PrefixLocation;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.ram.RamTier;
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
import java.util.OptionalInt;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The reads of a {@link TieredCache}: RAM first, then the spill queue, then the lower tier, whose
 * hits are promoted into RAM; prefix lookups and pins across the tiers; and the count of hits per
 * tier. It shares the cache's tiers, spill queue and {@link CopyCoherence} ({@link TieredCache} says
 * what they promise), and is closed when the cache is. The cache checks the arguments of the reads
 * it passes on, and that it is open, as every {@link dev.kvcache.spi.AbstractTier} does; {@link
 * #getAbove} and {@link #readAllInto}, for calls it does not check so, check their own.
 */
final class TieredReads {

  private static final Logger log = LoggerFactory.getLogger(TieredReads.class);

  private final RamTier ram;
  private final Tier lower;
  private final TieredCacheConfig config;
  private final SpillQueue spills;
  private final KeyStripes stripes;
  private final CopyCoherence copies;
  private final TierCounters counters;
  private final BooleanSupplier closed;
  private final LongAdder ramHits = new LongAdder();
  private final LongAdder spillHits = new LongAdder();
  private final LongAdder lowerHits = new LongAdder();
  private final LongAdder promotions = new LongAdder();

  TieredReads(RamTier ram, Tier lower, TieredCacheConfig config, SpillQueue spills,
      CopyCoherence copies, TierCounters counters, BooleanSupplier closed) {
    this.ram = ram;
    this.lower = lower;
    this.config = config;
    this.spills = spills;
    this.stripes = copies.stripes();
    this.copies = copies;
    this.counters = counters;
    this.closed = closed;
  }

  long ramHits() {
    return ramHits.sum();
  }

  long spillHits() {
    return spillHits.sum();
  }

  long lowerHits() {
    return lowerHits.sum();
  }

  long promotions() {
    return promotions.sum();
  }


  BlockLease get(BlockKey key) {
    BlockLease above = leaseAbove(key);
    if (above != null) {
      return above;
    }
    int stripe = KeyStripes.of(key);
    long generation = stripes.generation(stripe);
    long start = System.nanoTime();
    BlockLease fromLower = lower.get(key);
    if (fromLower.status() != GetStatus.HIT) {
      counters.miss();
      return BlockLease.miss(key);
    }
    lowerHits.increment();
    if (promote(key, fromLower.bytes(), fromLower.crc32c(), stripe, generation)) {
      // the copy into RAM read the lease's bytes: the lower tier's read, timed here
      lower.loadRate().record(fromLower.length(), System.nanoTime() - start);
    }
    return opened(TieredLease.over(fromLower, counters::leaseClosed));
  }

  /**
   * The lease on the key's copy in RAM or in the spill queue, counted as a hit; or null, also
   * while compaction moves RAM's copy ({@link RamTier#tryGet}).
   */
  BlockLease getAbove(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    return leaseAbove(key, false);
  }

  /**
   * Leases each block, as {@link #get} does; the blocks RAM and the spill queue lack are read with
   * one {@link Tier#getAll} call to the lower tier.
   */
  List<BlockLease> getAll(List<BlockKey> keys) {
    long[] generation = new long[keys.size()];
    return LeaseBatch.read(keys, i -> {
      BlockLease above = leaseAbove(keys.get(i));
      if (above == null) {
        generation[i] = stripes.generation(KeyStripes.of(keys.get(i)));
      }
      return above;
    }, lower::getAll, (i, lease) -> leasedBelow(keys.get(i), lease, generation[i]));
  }

  /** A lease the lower tier gave, counted, and promoted if a hit, as {@link #get} does. */
  private BlockLease leasedBelow(BlockKey key, BlockLease lease, long generation) {
    if (lease.status() != GetStatus.HIT) {
      lease.close();
      counters.miss();
      return BlockLease.miss(key);
    }
    lowerHits.increment();
    promote(key, lease.bytes(), lease.crc32c(), KeyStripes.of(key), generation);
    return opened(TieredLease.over(lease, counters::leaseClosed));
  }

  /** A lease on the key's copy in RAM or in the spill queue, counted as a hit; or null. */
  private BlockLease leaseAbove(BlockKey key) {
    return leaseAbove(key, true);
  }

  /**
   * As {@link #leaseAbove(BlockKey)}; if not {@code mayWait}, null while compaction moves RAM's
   * copy.
   */
  private BlockLease leaseAbove(BlockKey key, boolean mayWait) {
    BlockLease fromRam;
    if (mayWait) {
      fromRam = ram.get(key);
    } else {
      Optional<BlockLease> now = ram.tryGet(key);
      if (now.isEmpty()) {
        return null;
      }
      fromRam = now.get();
    }
    if (fromRam.status() == GetStatus.HIT) {
      ramHits.increment();
      lower.usedAbove(key);
      return opened(TieredLease.over(fromRam, counters::leaseClosed));
    }
    SpillEntry queued = spills.find(key);
    if (queued != null && queued.tryRetain()) {
      spillHits.increment();
      lower.usedAbove(key);
      return opened(new TieredLease(key, queued.bytes(), queued.lease().crc32c(), () -> {
        queued.release();
        counters.leaseClosed();
      }));
    }
    return null;
  }

  private BlockLease opened(BlockLease lease) {
    counters.hit();
    counters.leaseOpened();
    return lease;
  }

  GetStatus getInto(BlockKey key, ByteBuffer dst) {
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
  GetStatus[] getAllInto(List<BlockKey> keys, List<ByteBuffer> dsts) {
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
  TieredRead[] readAllInto(List<BlockKey> keys, List<ByteBuffer> dsts) {
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
      Objects.requireNonNull(keys.get(i), "key");
      Objects.requireNonNull(dsts.get(i), "dst");
      ensureOpen();
      if (dsts.get(i).isReadOnly()) {
        throw new ReadOnlyBufferException();
      }
      result[i] = readAbove(keys.get(i), dsts.get(i));
      if (result[i] == null) {
        fromLower.add(i);
        generation[i] = stripes.generation(KeyStripes.of(keys.get(i)));
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
    long generation = stripes.generation(KeyStripes.of(key));
    int start = dst.position();
    return fromLower(key, dst, lower.getInto(key, dst), start, generation);
  }

  /** A read served by RAM or the spill queue; null if the block is in neither. */
  private TieredRead readAbove(BlockKey key, ByteBuffer dst) {
    GetStatus status = ram.getInto(key, dst);
    if (status != GetStatus.MISS) {
      if (status == GetStatus.HIT) {
        lower.usedAbove(key);
      }
      return counted(status, Source.RAM, ramHits);
    }
    SpillEntry queued = spills.find(key);
    if (queued != null && queued.tryRetain()) {
      try {
        ByteBuffer bytes = queued.bytes();
        if (dst.remaining() < bytes.remaining()) {
          return counted(GetStatus.BUFFER_TOO_SMALL, Source.SPILL_QUEUE, spillHits);
        }
        dst.put(bytes);
        lower.usedAbove(key);
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
      promote(key, dst.duplicate().flip().position(start), OptionalInt.empty(), KeyStripes.of(key),
          generation);
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
   * more than half full (the blocks the copy evicts could be dropped), RAM has the key already, a
   * put or delete in its stripe since {@code generation} may have made it stale, or one is under
   * way: the read may be on a thread that must not wait (an event loop), and the lock of a put may
   * be held across the lower tier's write or delete. Puts and deletes bump the generation both
   * before and after they change the tiers, so a read that took the generation while one was under
   * way (and may have read the lower tier before it deleted the key there) finds it changed. The
   * copy's CRC32C, computed as it is made, must be {@code expected} when that is known: a copy
   * whose bytes changed on the way is not kept.
   */
  private boolean promote(BlockKey key, ByteBuffer bytes, OptionalInt expected, int stripe,
      long generation) {
    if (!config.promoteOnLowerHit() || bytes.remaining() > ram.maxBlockBytes()
        || !spills.hasRoom(bytes.remaining())) {
      return false; // a promotion evicts: it must not push blocks out of a full spill queue
    }
    ReentrantLock lock = stripes.lock(stripe);
    if (!lock.tryLock()) {
      return false; // a put or delete of its stripe is under way: the next read promotes it
    }
    try {
      if (stripes.generation(stripe) != generation || closed.getAsBoolean() || ram.contains(key)) {
        return false;
      }
      copies.markClean(key); // before the put: RAM may evict the copy at once, and need not spill it
      // through a writer, not put: RAM times its puts as its own copy speed, and these bytes may
      // still be in the lower tier's files
      try (BlockWriter copy = ram.writer(key, bytes.remaining())) {
        if (copy.rejection().isEmpty()) {
          copy.write(bytes.duplicate());
          if (expected.isPresent() && copy.crc32c().orElse(expected.getAsInt())
              != expected.getAsInt()) {
            log.warn("block {} changed while it was copied from the {} tier into RAM: not kept",
                key, lower.name());
          } else if (copy.commit() == PutStatus.STORED) {
            promotions.increment();
            return true;
          }
        }
      }
      copies.forgetClean(key);
      return false;
    } finally {
      lock.unlock();
    }
  }

  boolean contains(BlockKey key) {
    return ram.contains(key) || spills.holds(key) || lower.contains(key);
  }

  /**
   * How many leading keys some tier holds. Each run of keys that neither RAM nor the spill queue
   * holds is looked up in the lower tier with one {@link Tier#lookupPrefix} call, which a remote
   * tier answers with one request per server instead of one per key.
   */
  int lookupPrefix(List<BlockKey> keys) {
    return locatePrefix(keys).blocks();
  }

  /**
   * The leading keys some tier holds, found as {@link #lookupPrefix} finds them, in runs by tier:
   * {@code ram}, {@code spill} (estimated at RAM's rate: the queue's copies are in memory), and
   * the lower tier's own runs from its {@link Tier#locatePrefix}.
   */
  PrefixLocation locatePrefix(List<BlockKey> keys) {
    PrefixLocation found = PrefixLocation.NONE;
    int n = 0;
    while (n < keys.size()) {
      PrefixLocation inRam = ram.locatePrefix(keys.subList(n, keys.size()));
      int queued = 0;
      long queuedBytes = 0;
      for (SpillEntry e; inRam.blocks() == 0 && n + queued < keys.size()
          && (e = spills.find(keys.get(n + queued))) != null; queued++) {
        queuedBytes += e.size();
      }
      if (inRam.blocks() > 0 || queued > 0) {
        found = found.then(inRam.blocks() > 0 ? inRam
            : PrefixLocation.of("spill", queued, ram.loadRate().estimate(queued, queuedBytes)));
        n += inRam.blocks() + queued;
        continue;
      }
      // the run of keys neither RAM nor the queue holds: a read of the others is served above
      int end = n + 1;
      while (end < keys.size() && !ram.contains(keys.get(end))
          && spills.find(keys.get(end)) == null) {
        end++;
      }
      PrefixLocation below = lower.locatePrefix(keys.subList(n, end));
      found = found.then(below);
      n += below.blocks();
      if (n < end) {
        break; // no tier holds keys[n]
      }
    }
    return found;
  }

  /**
   * Pins the leading keys some tier holds, as {@link #lookupPrefix} finds them: copies in RAM or
   * in the spill queue under leases, and each run of keys these lack with one {@link
   * Tier#pinPrefix} call to the lower tier, which keeps those blocks in its own way (a remote tier
   * under its servers' leases, an object tier fetching a block only when it is read). A key held
   * above is pinned above, never below. A block read through the lower tier's pin is promoted into
   * RAM as {@link #get} promotes a lower-tier hit, unless a put or delete in its stripe came after
   * the pin. Each pinned block counts as a hit in its tier, the first key not found as a miss.
   */
  PrefixPin pinPrefix(List<BlockKey> keys, Duration timeout) {
    long[] before = stripes.generations(); // a put or delete after this makes a pinned copy stale
    TieredPin pinned = new TieredPin((key, bytes) -> {
      int stripe = KeyStripes.of(key);
      promote(key, bytes, OptionalInt.empty(), stripe, before[stripe]);
    });
    return PrefixWalk.pin(keys, timeout, pinned, this::leaseAbove,
        key -> ram.contains(key) || spills.find(key) != null, key -> true, lower, lowerHits,
        counters);
  }

  private void ensureOpen() {
    if (closed.getAsBoolean()) {
      throw new IllegalStateException("the tiered cache is closed");
    }
  }
}
