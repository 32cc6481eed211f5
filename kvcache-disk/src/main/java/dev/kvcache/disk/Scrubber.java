package dev.kvcache.disk;

import static dev.kvcache.disk.internal.RecordLayout.KIND_BLOCK;

import dev.kvcache.BlockKey;
import dev.kvcache.disk.internal.Location;
import dev.kvcache.disk.internal.RateLimiter;
import dev.kvcache.disk.internal.Records;
import dev.kvcache.disk.internal.SuperBlock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The disk tier's background scrub: reads every block's record, a super-block at a time, oldest
 * first, at {@link DiskTierConfig#scrubBytesPerSecond()} at most, and checks it against its
 * checksum, so that damage (a bit flipped at rest, a sector gone bad) is found before a read meets
 * it. A damaged block is dropped and counted, as a read that finds one drops it. Only the records
 * the index points at are read: dead ones cost nothing. Records are read as reads of the blocks
 * read them ({@link RecordReads#payloadIntact}): one not in the page cache is read past it, so a
 * pass does not fill the page cache with the whole tier. When a pass is over, the next starts.
 */
final class Scrubber extends BackgroundWork {

  private static final Logger log = LoggerFactory.getLogger(Scrubber.class);

  private final ConcurrentSkipListMap<Integer, SuperBlock> superBlocks;
  private final BlockIndex index;
  private final RecordReads reads;
  private final RateLimiter limiter;
  private final LongAdder records = new LongAdder();
  private final LongAdder bytes = new LongAdder();
  private final LongAdder damaged = new LongAdder();
  private final LongAdder passes = new LongAdder();

  Scrubber(ConcurrentSkipListMap<Integer, SuperBlock> superBlocks, BlockIndex index,
      RecordReads reads, long bytesPerSecond, String dir) {
    super("kvcache-disk-scrub " + dir, TimeUnit.SECONDS.toNanos(1));
    this.superBlocks = superBlocks;
    this.index = index;
    this.reads = reads;
    this.limiter = new RateLimiter(bytesPerSecond);
  }

  /** Records checked so far. */
  long records() {
    return records.sum();
  }

  /** Bytes of records checked so far. */
  long bytes() {
    return bytes.sum();
  }

  /** Damaged blocks the scrub found and dropped. */
  long damaged() {
    return damaged.sum();
  }

  /** Passes over every super-block completed. */
  long passes() {
    return passes.sum();
  }

  @Override
  public void run() {
    while (!stopped()) {
      int next = 0;
      boolean any = false;
      for (Map.Entry<Integer, SuperBlock> e = superBlocks.ceilingEntry(next);
          e != null && !stopped(); e = superBlocks.ceilingEntry(next)) {
        next = e.getKey() + 1;
        any |= scrub(e.getValue());
      }
      if (stopped()) {
        return;
      }
      passes.increment();
      if (!any) {
        idle();
      }
    }
  }

  /**
   * Checks the indexed records of {@code sb}; whether there were any. The super-block is pinned
   * only while its headers are read and while each record is checked, never while the scrub waits
   * for its rate: a dropped super-block's file goes as soon as it would without a scrub.
   */
  private boolean scrub(SuperBlock sb) {
    List<Map.Entry<BlockKey, Location>> indexed = new ArrayList<>();
    if (!sb.pin()) {
      return false; // dropped meanwhile
    }
    try {
      Records.scan(sb, sb.end(), (kind, key, loc) -> {
        Location cur = index.get(key);
        if (kind == KIND_BLOCK && cur != null && cur.superBlockId == sb.id()
            && cur.payloadOffset == loc.payloadOffset) {
          indexed.add(Map.entry(key, cur));
        }
      });
    } finally {
      sb.unpin();
    }
    for (Map.Entry<BlockKey, Location> e : indexed) {
      Location loc = e.getValue();
      limiter.acquire(loc.storedLength);
      if (stopped() || !sb.pin()) {
        break; // closing, or the super-block was dropped meanwhile
      }
      try {
        if (index.get(e.getKey()) != loc) {
          continue; // replaced or deleted meanwhile
        }
        if (!reads.payloadIntact(loc, sb)
            && reads.corrupt(e.getKey(), loc, sb, "found by the scrub")) {
          damaged.increment();
        }
        records.increment();
        bytes.add(loc.storedLength);
      } catch (RuntimeException ex) {
        log.warn("scrubbing {} failed: {}", sb.path(), ex.toString());
        break;
      } finally {
        sb.unpin();
      }
    }
    return !indexed.isEmpty();
  }
}
