package dev.kvcache.internal.memory;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The RAM tier's allocator: a fixed budget of direct memory, reserved and zeroed up front in
 * arenas of at most 1 GiB (a {@link java.nio.ByteBuffer} addresses at most 2 GiB), handed out as
 * {@link OffHeapBlock}s.
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
 * {@code kvcache-ram-<pid>-<n>-<arena>}, readable by this user only), mapped, so that other
 * processes of the user on this host can map it and copy a leased block out of it; the files are
 * deleted on {@link #close()}, and files a process that is gone left behind are deleted when the
 * next one starts.
 */
public final class OffHeapMemory {

  /** Allocation unit: every block occupies a whole number of 4 KiB granules. */
  public static final int GRANULE_BYTES = Arena.GRANULE_BYTES;

  /** The largest arena: a direct buffer is int-indexed, and 1 GiB keeps compaction pauses short. */
  public static final int MAX_ARENA_BYTES = 1 << 30;

  private static final String FILE_PREFIX = "kvcache-ram-";
  private static final AtomicInteger INSTANCES = new AtomicInteger();

  private final Arena[] arenas;
  private final long capacityBytes;

  /**
   * Reserves {@code capacityBytes} (rounded down to whole granules) of direct memory.
   *
   * @throws IllegalStateException if the JVM cannot reserve that much direct memory
   */
  public OffHeapMemory(long capacityBytes, int arenaBytes) {
    this(capacityBytes, arenaBytes, null);
  }

  /**
   * Reserves {@code capacityBytes} (rounded down to whole granules) of direct memory, or of files
   * in {@code sharedDir} (a tmpfs such as {@code /dev/shm}) if not null.
   *
   * @throws IllegalStateException if the JVM cannot reserve that much direct memory, or the files
   *     cannot be made
   */
  public OffHeapMemory(long capacityBytes, int arenaBytes, Path sharedDir) {
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
    this.arenas = new Arena[count];
    String prefix = null;
    if (sharedDir != null) {
      deleteStaleFiles(sharedDir);
      prefix = FILE_PREFIX + ProcessHandle.current().pid() + "-" + INSTANCES.incrementAndGet()
          + "-";
    }
    long left = granules;
    try {
      for (int i = 0; i < count; i++) {
        int bytes = (int) (Math.min(arenaGranules, left) * GRANULE_BYTES);
        arenas[i] = sharedDir == null
            ? new Arena(bytes)
            : new Arena(bytes, sharedDir.resolve(prefix + i));
        left -= bytes / GRANULE_BYTES;
      }
    } catch (OutOfMemoryError e) {
      throw cannotReserve(capacityBytes, e.getMessage());
    } catch (IOException e) {
      close();
      throw new IllegalStateException("cannot make the RAM tier's " + directBytes + " bytes of"
          + " shared memory in " + sharedDir + ": " + e, e);
    }
    this.capacityBytes = granules * GRANULE_BYTES;
  }

  /** Deletes the arena files of processes that are gone. */
  private static void deleteStaleFiles(Path dir) {
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, FILE_PREFIX + "*")) {
      for (Path f : files) {
        String[] parts = f.getFileName().toString().substring(FILE_PREFIX.length()).split("-");
        try {
          long pid = Long.parseLong(parts[0]);
          if (ProcessHandle.of(pid).isEmpty()) {
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

  /**
   * Deletes the shared-memory files, if any: processes that mapped them keep their mappings, and
   * none can map them anew. The memory itself is freed once no view of it is reachable.
   */
  public void close() {
    for (Arena arena : arenas) {
      if (arena != null && arena.file != null) {
        try {
          Files.deleteIfExists(arena.file);
        } catch (IOException e) {
          // left for the next start to delete
        }
      }
    }
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
    for (Arena arena : arenas) {
      OffHeapBlock block = arena.allocate(lengthBytes, initialRefs);
      if (block != null) {
        return block;
      }
    }
    if (budget.remainingBytes() <= 0) {
      return null;
    }
    Arena[] byFreeSpace = arenas.clone();
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
    long free = 0;
    for (Arena arena : arenas) {
      free += arena.freeGranules();
    }
    return capacityBytes - free * GRANULE_BYTES;
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
