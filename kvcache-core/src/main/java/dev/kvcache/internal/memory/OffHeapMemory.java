package dev.kvcache.internal.memory;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The RAM tier's allocator: a fixed budget of direct memory in arenas of at most 1 GiB (a {@link
 * java.nio.ByteBuffer} addresses at most 2 GiB), handed out as {@link OffHeapBlock}s.
 *
 * <p>The constructor checks the whole budget against the JVM's direct memory limit; a thread
 * ({@code kvcache-ram-reserve}) then makes the arenas one at a time (after {@link
 * #releaseReservations()} if they are held). Making an arena zeroes it, which touches every page:
 * a fraction of a second to seconds per GiB, minutes for tens of GiB, which would otherwise hold up
 * a server's start. Until every arena is made, a block that fits in none of those made waits for
 * the next rather than compacting or evicting, so that what the cache keeps never depends on how
 * far the reservation has come.
 *
 * <p>Why plain direct buffers and not Chronicle Bytes: a lease must give the caller a {@link
 * java.nio.ByteBuffer} view (what NIO channels, Netty and JNI accept), which a direct buffer slice
 * provides without copying; bulk copies between direct buffers run as fast as through a
 * Chronicle native store (equal within the noise in {@code MemoryCopyBenchmark}, kvcache-bench);
 * and direct buffers need no JVM flags and no deprecated {@code sun.misc.Unsafe} memory access,
 * while the memory stays valid for as long as any view of it is reachable.
 *
 * <p>Allocation tries every arena best-fit; when none has a free run long enough, the arenas with
 * enough free granules in total are compacted, roomiest first, within a budget of bytes moved.
 * Null means the caller must free something (evict) first, or give up.
 *
 * <p>The JVM's direct memory holds the capacity plus 4 KiB per arena, spent on aligning each
 * arena to a page. With a shared-memory directory, each arena is instead a file there (named
 * {@code kvcache-ram-<pid>-<start>-<n>-<arena>}, {@code <start>} the process's start in
 * milliseconds since the epoch, readable by this user only), mapped, so that other
 * processes of the user on this host can map it and copy a leased block out of it; the files are
 * deleted on {@link #close()}, and files a process that is gone left behind are deleted when the
 * next one starts.
 */
public final class OffHeapMemory {

  /** Allocation unit: every block occupies a whole number of 4 KiB granules. */
  public static final int GRANULE_BYTES = Arena.GRANULE_BYTES;

  /** The largest arena: a direct buffer is int-indexed, and 1 GiB keeps compaction pauses short. */
  public static final int MAX_ARENA_BYTES = 1 << 30;

  private static final Logger log = LoggerFactory.getLogger(OffHeapMemory.class);
  private static final String FILE_PREFIX = "kvcache-ram-";
  private static final AtomicInteger INSTANCES = new AtomicInteger();
  /** Guards {@link #holds} and each memory's {@link #wanted}. */
  private static final Object GATE = new Object();
  private static int holds;

  private final long capacityBytes;
  private final int planned;
  private final long arenaGranules;
  private final long granules;
  private final Path sharedDir;
  private final String filePrefix;
  /** The arenas made so far, in order; replaced whole (under this monitor) as each is added. */
  private volatile Arena[] arenas;
  private final Thread reserver;
  private final BiConsumer<Long, Long> onFirstArena;
  private volatile boolean closed;
  /** Guarded by {@link #GATE}: a put has waited for this memory's next arena. */
  private boolean wanted;
  /** Guarded by this monitor: the reserving thread has arenas left to make. */
  private boolean reserving;
  private volatile IllegalStateException reserveFailure;

  /**
   * Reserves {@code capacityBytes} (rounded down to whole granules) of direct memory.
   *
   * @throws IllegalStateException if the JVM cannot reserve that much direct memory
   */
  public OffHeapMemory(long capacityBytes, int arenaBytes) {
    this(capacityBytes, arenaBytes, null, null);
  }

  /**
   * Reserves {@code capacityBytes} (rounded down to whole granules) of direct memory, or of files
   * in {@code sharedDir} (a tmpfs such as {@code /dev/shm}) if not null, in the background.
   *
   * @param onFirstArena if not null, told the bytes of the first arena and the nanoseconds its
   *     zeroing took, once it is made
   * @throws IllegalStateException if the JVM's direct memory limit is below the capacity, or
   *     {@code sharedDir} is not a directory this process may write in
   */
  public OffHeapMemory(long capacityBytes, int arenaBytes, Path sharedDir,
      BiConsumer<Long, Long> onFirstArena) {
    if (arenaBytes < GRANULE_BYTES || arenaBytes > MAX_ARENA_BYTES) {
      throw new IllegalArgumentException(
          "arena size must be " + GRANULE_BYTES + " to " + MAX_ARENA_BYTES + " bytes, got "
              + arenaBytes);
    }
    long granules = capacityBytes / GRANULE_BYTES;
    if (granules < 1) {
      throw new IllegalArgumentException(
          "capacity must be at least " + GRANULE_BYTES + " bytes, got " + capacityBytes);
    }
    long arenaGranules = arenaBytes / GRANULE_BYTES;
    long arenaCount = (granules + arenaGranules - 1) / arenaGranules;
    long slack = arenaCount * Arena.ALIGNMENT_SLACK_BYTES;
    long directBytes = granules * GRANULE_BYTES;
    if (sharedDir == null) {
      requireReservable(
          directBytes > Long.MAX_VALUE - slack ? Long.MAX_VALUE : directBytes + slack);
    }
    if (arenaCount > Integer.MAX_VALUE) {
      throw cannotReserve(capacityBytes, arenaCount + " arenas");
    }
    int count = (int) arenaCount;
    this.planned = count;
    this.arenaGranules = arenaGranules;
    this.granules = granules;
    this.sharedDir = sharedDir;
    if (sharedDir != null) {
      deleteStaleFiles(sharedDir);
      this.filePrefix = FILE_PREFIX + ProcessHandle.current().pid() + "-"
          + startMillis(ProcessHandle.current()) + "-" + INSTANCES.incrementAndGet() + "-";
    } else {
      this.filePrefix = null;
    }
    this.capacityBytes = directBytes;
    this.onFirstArena = onFirstArena;
    if (sharedDir != null && !(Files.isDirectory(sharedDir) && Files.isWritable(sharedDir))) {
      throw cannotMakeShared(directBytes, sharedDir, "not a directory this process may write in",
          null);
    }
    this.arenas = new Arena[0];
    this.reserving = true;
    this.reserver = new Thread(this::reserve, "kvcache-ram-reserve");
    reserver.setDaemon(true);
    reserver.start();
  }

  /** Arena {@code i}: its share of the budget, zeroed (or its file written full of zeros). */
  private Arena makeArena(int i) {
    long before = i * arenaGranules;
    int bytes = (int) (Math.min(arenaGranules, granules - before) * GRANULE_BYTES);
    try {
      return sharedDir == null ? new Arena(bytes) : new Arena(bytes, sharedDir.resolve(filePrefix + i));
    } catch (OutOfMemoryError e) {
      throw cannotReserve(capacityBytes, e.getMessage());
    } catch (IOException e) {
      throw cannotMakeShared(capacityBytes, sharedDir, e.toString(), e);
    }
  }

  /**
   * Makes the arenas one at a time, publishing each as it is ready: zeroing touches every page,
   * which takes seconds per GiB, and a cache is usable from its first arena on.
   */
  private void reserve() {
    awaitGate();
    long start = System.nanoTime();
    try {
      for (int i = 0; i < planned && !closed; i++) {
        long arenaStart = System.nanoTime();
        Arena arena = makeArena(i);
        if (i == 0 && onFirstArena != null) {
          onFirstArena.accept(arena.capacityGranules() * (long) GRANULE_BYTES,
              System.nanoTime() - arenaStart);
        }
        synchronized (this) {
          if (closed) {
            deleteFile(arena);
            return;
          }
          Arena[] more = Arrays.copyOf(arenas, i + 1);
          more[i] = arena;
          arenas = more;
          notifyAll();
        }
      }
      if (!closed) {
        log.info("RAM tier: its {} MiB reserved and zeroed in {} ms", capacityBytes >> 20,
            (System.nanoTime() - start) / 1_000_000);
      }
    } catch (IllegalStateException e) {
      reserveFailure = e;
      log.error("RAM tier: stays at the {} MiB reserved so far: {}", reservedBytes() >> 20,
          e.getMessage());
    } finally {
      synchronized (this) {
        reserving = false;
        notifyAll();
      }
    }
  }

  /**
   * Waits until the arenas after the first present ones have been made (or their reservation
   * failed, or the memory was closed); returns the arenas present then.
   */
  private Arena[] awaitArenaBeyond(int present) {
    synchronized (GATE) {
      wanted = true; // a put waits for memory: a hold no longer applies to this memory
      GATE.notifyAll();
    }
    return awaitArena(present);
  }

  private synchronized Arena[] awaitArena(int present) {
    boolean interrupted = false;
    while (arenas.length <= present && reserving && !closed) {
      try {
        wait();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    return arenas;
  }

  /**
   * Holds back the zeroing of memories made from now until {@link #releaseReservations()}: a
   * thread zeroing an arena (inside {@code ByteBuffer.allocateDirect}, in one call into the JVM)
   * keeps every other thread from reaching a safepoint until it is done, a second or more per GiB
   * on a busy host, so each collection while a process starts would wait that long. A memory a
   * put is waiting for is zeroed all the same. Holds nest.
   */
  public static void holdReservations() {
    synchronized (GATE) {
      holds++;
    }
  }

  /** Ends one {@link #holdReservations()}. */
  public static void releaseReservations() {
    synchronized (GATE) {
      if (holds > 0) {
        holds--;
      }
      GATE.notifyAll();
    }
  }

  private void awaitGate() {
    boolean interrupted = false;
    synchronized (GATE) {
      while (holds > 0 && !wanted && !closed) {
        try {
          GATE.wait(1000);
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Whether every arena has been made; until then a put that finds no room in those made waits
   * for the next rather than compacting or evicting.
   */
  public boolean reserved() {
    return arenas.length == planned;
  }

  /**
   * Waits until every arena has been made, up to {@code timeoutMillis}.
   *
   * @return whether every arena was made in time
   * @throws IllegalStateException if making one failed (the memory then stays at the arenas made)
   */
  public boolean awaitReserved(long timeoutMillis) throws InterruptedException {
    long deadline = System.nanoTime() + timeoutMillis * 1_000_000;
    synchronized (this) {
      while (!reserved() && reserving && !closed) {
        long left = (deadline - System.nanoTime()) / 1_000_000;
        if (left <= 0) {
          return false;
        }
        wait(left);
      }
    }
    if (reserveFailure != null) {
      throw reserveFailure;
    }
    return reserved();
  }

  /** The thread that makes the arenas. */
  Thread reserver() {
    return reserver;
  }

  /** Bytes of the budget in arenas made so far. */
  public long reservedBytes() {
    long bytes = 0;
    for (Arena arena : arenas) {
      bytes += (long) arena.capacityGranules() * GRANULE_BYTES;
    }
    return bytes;
  }

  /**
   * Deletes the arena files of processes that are gone: no process has the file's id, or the one
   * that has it started at another time than the file's (in a container each start is process 1).
   * A file named {@code <pid>-<n>-<arena>}, as before the start time was in the name, is gone
   * when its process is.
   */
  private static void deleteStaleFiles(Path dir) {
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, FILE_PREFIX + "*")) {
      for (Path f : files) {
        String[] parts = f.getFileName().toString().substring(FILE_PREFIX.length()).split("-");
        try {
          long pid = Long.parseLong(parts[0]);
          Optional<ProcessHandle> process = ProcessHandle.of(pid);
          boolean gone = process.isEmpty()
              || (parts.length == 4 && Long.parseLong(parts[1]) != startMillis(process.get()));
          if (gone) {
            Files.deleteIfExists(f);
          }
        } catch (NumberFormatException | IOException e) {
          // not ours, or no longer there: leave it
        }
      }
    } catch (IOException e) {
      // an unreadable directory fails when the arenas are made, with its reason
    }
  }

  /** When {@code process} started, in milliseconds since the epoch; 0 if unknown. */
  private static long startMillis(ProcessHandle process) {
    return process.info().startInstant().map(Instant::toEpochMilli).orElse(0L);
  }

  /**
   * Stops the reservation (waiting for the arena being made, which is then deleted) and deletes
   * the shared-memory files, if any, so that none is left in their directory once this returns:
   * processes that mapped them keep their mappings, and none can map them anew. The memory itself
   * is freed once no view of it is reachable.
   */
  public void close() {
    Arena[] made;
    synchronized (this) {
      closed = true;
      notifyAll();
      made = arenas;
    }
    synchronized (GATE) {
      GATE.notifyAll(); // a reservation held back at the gate ends at once
    }
    if (Thread.currentThread() != reserver) {
      try {
        reserver.join(TimeUnit.MINUTES.toMillis(1));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    for (Arena arena : made) {
      deleteFile(arena);
    }
  }

  private static void deleteFile(Arena arena) {
    if (arena != null && arena.file != null) {
      try {
        Files.deleteIfExists(arena.file);
      } catch (IOException e) {
        // left for the next start to delete
      }
    }
  }

  private static IllegalStateException cannotMakeShared(long bytes, Path dir, String why,
      Throwable cause) {
    return new IllegalStateException("cannot make the RAM tier's " + bytes + " bytes of shared"
        + " memory in " + dir + ": " + why, cause);
  }

  /** Fails before touching any memory if the JVM's direct memory limit is below the request. */
  private static void requireReservable(long bytes) {
    long limit = maxDirectMemoryBytes();
    if (limit > 0 && bytes > limit) {
      throw cannotReserve(bytes, "the JVM's direct memory limit is " + limit + " bytes");
    }
  }

  /** -XX:MaxDirectMemorySize, or the maximum heap size it defaults to; 0 if unknown. */
  private static long maxDirectMemoryBytes() {
    try {
      HotSpotDiagnosticMXBean vm = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
      long configured = vm == null ? 0 : Long.parseLong(vm.getVMOption("MaxDirectMemorySize").getValue());
      return configured > 0 ? configured : Runtime.getRuntime().maxMemory();
    } catch (RuntimeException e) {
      return 0; // not a HotSpot JVM: the reservation itself will tell
    }
  }

  private static IllegalStateException cannotReserve(long bytes, String why) {
    return new IllegalStateException(
        "cannot reserve " + bytes + " bytes of direct memory for the RAM tier (" + why + "); raise"
            + " -XX:MaxDirectMemorySize (it defaults to the maximum heap size) or lower the"
            + " capacity");
  }

  /** Rounds a payload length up to the bytes it occupies. */
  public static long allocatedBytesFor(int lengthBytes) {
    return (long) Arena.granulesFor(lengthBytes) * GRANULE_BYTES;
  }

  /**
   * A block of {@code lengthBytes} with {@code initialRefs} references (the first is the owner's),
   * moving at most four times its length of other blocks to make room; null if that is not enough.
   */
  public OffHeapBlock allocate(int lengthBytes, int initialRefs) {
    return allocate(lengthBytes, initialRefs, CompactionBudget.bounded(4L * lengthBytes));
  }

  /**
   * A block of {@code lengthBytes} with {@code initialRefs} references (the first is the owner's):
   * best fit in any arena, otherwise compaction of the arenas with enough free granules, roomiest
   * first, spending {@code budget}; null if no arena can make room within it.
   */
  public OffHeapBlock allocate(int lengthBytes, int initialRefs, CompactionBudget budget) {
    Arena[] present = arenas;
    for (int tried = 0; ; ) {
      for (; tried < present.length; tried++) {
        OffHeapBlock block = present[tried].allocate(lengthBytes, initialRefs);
        if (block != null) {
          return block;
        }
      }
      if (present.length == planned || closed) {
        break;
      }
      Arena[] later = awaitArenaBeyond(present.length);
      if (later.length == present.length) {
        break; // the reservation failed or the memory closed: what is made is all there is
      }
      present = later;
    }
    if (budget.remainingBytes() <= 0) {
      return null;
    }
    Arena[] byFreeSpace = present.clone();
    Arrays.sort(byFreeSpace, Comparator.comparingInt(Arena::freeGranules).reversed());
    for (Arena arena : byFreeSpace) {
      OffHeapBlock block = arena.compactAndAllocate(lengthBytes, initialRefs, budget);
      if (block != null) {
        return block;
      }
    }
    return null;
  }

  /** The budget in bytes. */
  public long capacityBytes() {
    return capacityBytes;
  }

  /** Bytes allocated to blocks that have not been freed yet, granule-rounded. */
  public long usedBytes() {
    long used = 0;
    for (Arena arena : arenas) {
      used += arena.capacityGranules() - arena.freeGranules();
    }
    return used * GRANULE_BYTES;
  }

  public long compactions() {
    long n = 0;
    for (Arena arena : arenas) {
      n += arena.compactions();
    }
    return n;
  }

  public long bytesCompacted() {
    long n = 0;
    for (Arena arena : arenas) {
      n += arena.bytesCompacted();
    }
    return n;
  }
}
