package dev.kvcache.internal.memory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.TreeSet;

/**
 * One contiguous region of pre-reserved direct memory, carved into runs of 4 KiB granules.
 *
 * <h2>Layout</h2>
 *
 * <pre>
 *  granule: 0        4        9    11              20                      n
 *           [ used A ][ free   ][ B ][ free          ][ used C             ]
 *  runLength[start]     = length of the run starting there (free or used)
 *  runStartByEnd[end-1] = start of the run ending there (boundary tag for coalescing)
 *  owner[start]         = the block occupying a used run; null for a free run
 *  freeRuns             = every free run as (length &lt;&lt; 32 | start), ordered, so the smallest run
 *                         that fits is one ceiling() away (best fit)
 * </pre>
 *
 * Only run boundaries hold meaningful values; cells inside a run are stale and never read. The
 * bookkeeping costs 12 bytes per 4 KiB granule (0.3%) regardless of how many blocks are cached, so
 * the per-block heap cost stays in the {@link OffHeapBlock} object.
 *
 * <h2>Fragmentation</h2>
 *
 * Internal waste is below one granule per block (under 6.25% at 64 KiB, 0.4% at 1 MiB). External
 * fragmentation is undone by {@link #compactAndAllocate}: it walks the runs in address order and slides
 * blocks that only their owner holds down over the free space before them, until a free run long
 * enough for the request has formed or a budget of bytes moved is spent. Leased blocks cannot move
 * and split the free space around them. With an unlimited budget a put therefore fails only if the
 * free granules, not the largest free run, fall short, or if leases pin blocks in the way.
 *
 * <h2>Concurrency</h2>
 *
 * Allocation, freeing and compaction hold this arena's monitor; copying payloads into and out of
 * blocks does not. Blocks are moved only while their reference count is pinned to {@code MOVING},
 * see {@link OffHeapBlock}.
 */
final class Arena {

  static final int GRANULE_SHIFT = 12;
  static final int GRANULE_BYTES = 1 << GRANULE_SHIFT;
  /** Extra direct memory reserved per arena so that it can start on a page boundary. */
  static final int ALIGNMENT_SLACK_BYTES = GRANULE_BYTES;

  final ByteBuffer memory;
  /** The shared-memory file {@link #memory} maps; null for private direct memory. */
  final Path file;
  /** A second view of {@link #memory} used as the copy source when compaction moves a block. */
  private final ByteBuffer moveSource;

  private final int granules;
  private final int[] runLength;
  private final int[] runStartByEnd;
  private final OffHeapBlock[] owner;
  private final TreeSet<Long> freeRuns = new TreeSet<>();
  private int freeGranules;
  private long compactions;
  private long bytesCompacted;

  /** An arena of private direct memory. */
  Arena(int bytes) {
    this(checkSize(bytes), null,
        // allocateDirect zeroes the memory, so every page is touched now rather than on the put
        // path; the extra granule lets the region start on a page boundary.
        ByteBuffer.allocateDirect(bytes + ALIGNMENT_SLACK_BYTES).alignedSlice(GRANULE_BYTES));
  }

  /**
   * An arena in a new file {@code file} (on a tmpfs), which other processes may map: the file is
   * written full of zeros first, so that a file system without room fails here, not on a put.
   *
   * @throws IOException if the file exists already, or cannot be written in full
   */
  Arena(int bytes, Path file) throws IOException {
    this(checkSize(bytes), file, mapNewFile(file, bytes));
  }

  private Arena(int bytes, Path file, ByteBuffer memory) {
    this.memory = memory;
    this.file = file;
    this.moveSource = memory.duplicate();
    this.granules = bytes >>> GRANULE_SHIFT;
    this.runLength = new int[granules];
    this.runStartByEnd = new int[granules];
    this.owner = new OffHeapBlock[granules];
    addFreeRun(0, granules);
    this.freeGranules = granules;
  }

  private static int checkSize(int bytes) {
    if (bytes <= 0 || bytes % GRANULE_BYTES != 0) {
      throw new IllegalArgumentException(
          "arena size must be a positive multiple of " + GRANULE_BYTES + ", got " + bytes);
    }
    return bytes;
  }

  private static ByteBuffer mapNewFile(Path file, int bytes) throws IOException {
    try (FileChannel ch = FileChannel.open(file, EnumSet.of(StandardOpenOption.CREATE_NEW,
        StandardOpenOption.READ, StandardOpenOption.WRITE),
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
      ByteBuffer zeros = ByteBuffer.allocateDirect(1 << 20);
      for (long at = 0; at < bytes; ) {
        zeros.clear().limit((int) Math.min(zeros.capacity(), bytes - at));
        at += ch.write(zeros, at);
      }
      return ch.map(FileChannel.MapMode.READ_WRITE, 0, bytes);
    } catch (IOException e) {
      Files.deleteIfExists(file);
      throw e;
    }
  }

  static int granulesFor(int bytes) {
    return (bytes + GRANULE_BYTES - 1) >>> GRANULE_SHIFT;
  }

  int capacityGranules() {
    return granules;
  }

  synchronized int freeGranules() {
    return freeGranules;
  }

  synchronized long compactions() {
    return compactions;
  }

  synchronized long bytesCompacted() {
    return bytesCompacted;
  }

  /** Best-fit allocation; null if no free run is long enough. */
  synchronized OffHeapBlock allocate(int lengthBytes, int initialRefs) {
    int need = granulesFor(lengthBytes);
    Long run = freeRuns.ceiling((long) need << 32);
    if (run == null) {
      return null;
    }
    freeRuns.remove(run);
    int runLen = (int) (run >>> 32);
    int start = (int) (long) run;
    if (runLen > need) {
      addFreeRun(start + need, runLen - need);
    }
    OffHeapBlock block = new OffHeapBlock(this, start, lengthBytes, initialRefs);
    setRun(start, need, block);
    freeGranules -= need;
    return block;
  }

  /** Returns a block's run, merging it with free neighbours. Called once, at refs == 0. */
  synchronized void free(OffHeapBlock block) {
    int start = block.startGranule;
    int len = granulesFor(block.length());
    if (owner[start] != block) {
      throw new IllegalStateException("block at granule " + start + " is not owned by this run");
    }
    freeGranules += len;
    int next = start + len;
    if (start > 0) {
      int prev = runStartByEnd[start - 1];
      if (owner[prev] == null) {
        removeFreeRun(prev);
        len += start - prev;
        start = prev;
      }
    }
    if (next < granules && owner[next] == null) {
      len += runLength[next];
      removeFreeRun(next);
    }
    addFreeRun(start, len);
  }

  /**
   * Compacts (within {@code budget}) until a free run of the request's size exists, then
   * allocates there; null if the free granules fall short or the budget runs out first.
   */
  synchronized OffHeapBlock compactAndAllocate(
      int lengthBytes, int initialRefs, CompactionBudget budget) {
    int need = granulesFor(lengthBytes);
    if (freeGranules < need || compact(need, budget) < need) {
      return null;
    }
    return allocate(lengthBytes, initialRefs);
  }

  /**
   * Slides movable blocks towards the start of the arena until a free run of {@code need}
   * granules exists, spending {@code budget} on the bytes moved.
   *
   * <p>The walk goes in address order and gathers free space into a "hole" that movable blocks
   * are copied down across; it stops as soon as the hole is long enough, so the bytes moved are
   * those of the blocks between the first free run and the point where enough free space has been
   * gathered, not the whole arena. A block that cannot move (leased, or being freed) closes the
   * hole and a new one starts after it.
   *
   * @return the length in granules of the hole where the walk stopped (at least {@code need} on
   *     success)
   */
  private int compact(int need, CompactionBudget budget) {
    long moved = 0;
    int hole = -1; // start of the free space gathered since the last block that stayed put
    int pos = 0;
    while (pos < granules) {
      int len = runLength[pos];
      OffHeapBlock block = owner[pos];
      if (block == null) {
        removeFreeRun(pos);
        if (hole < 0) {
          hole = pos;
        }
        pos += len;
        if (pos - hole >= need) {
          break;
        }
      } else if (hole < 0) {
        pos += len;
      } else if (!budget.allows(block.length())) {
        break;
      } else if (block.tryPinForMove()) {
        move(block, pos, hole);
        budget.spend(block.length());
        moved += block.length();
        setRun(hole, len, block);
        block.startGranule = hole;
        block.finishMove();
        hole += len;
        pos += len;
      } else {
        addFreeRun(hole, pos - hole); // it stays where it is: the hole ends before it
        hole = -1;
        pos += len;
      }
    }
    if (moved > 0) {
      compactions++;
      bytesCompacted += moved;
    }
    if (hole < 0) {
      return 0;
    }
    addFreeRun(hole, pos - hole);
    return pos - hole;
  }

  private void move(OffHeapBlock block, int fromGranule, int toGranule) {
    // Copy upwards in steps no longer than the distance, so no step overlaps its own source.
    int from = fromGranule << GRANULE_SHIFT;
    int to = toGranule << GRANULE_SHIFT;
    int step = from - to;
    int length = block.length();
    for (int done = 0; done < length; done += step) {
      memory.put(to + done, moveSource, from + done, Math.min(step, length - done));
    }
  }

  private void setRun(int start, int len, OffHeapBlock block) {
    runLength[start] = len;
    runStartByEnd[start + len - 1] = start;
    owner[start] = block;
  }

  private void addFreeRun(int start, int len) {
    setRun(start, len, null);
    freeRuns.add(((long) len << 32) | start);
  }

  private void removeFreeRun(int start) {
    freeRuns.remove(((long) runLength[start] << 32) | start);
  }
}
