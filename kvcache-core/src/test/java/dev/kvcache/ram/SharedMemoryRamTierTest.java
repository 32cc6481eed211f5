package dev.kvcache.ram;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.SharedMemorySlice;
import dev.kvcache.spi.Crc32c;
import dev.kvcache.testkit.Payloads;
import dev.kvcache.tiered.KvCacheConfig;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A RAM tier whose memory is files another process can map: what such a process reads through a
 * lease's or a pin's slice is the block, for as long as the lease or pin holds it.
 */
class SharedMemoryRamTierTest {

  private static final int BLOCK = 256 << 10;

  @TempDir Path dir;

  private RamTier open() {
    return new RamTier(RamTierConfig.ofCapacity(8L << 20).withArenaBytes(4 << 20)
        .withSharedMemory(dir));
  }

  /** The bytes at a slice, read as another process reads them: a mapping of its own. */
  private static ByteBuffer readAsAnotherProcess(SharedMemorySlice slice) throws IOException {
    try (FileChannel ch = FileChannel.open(slice.file(), StandardOpenOption.READ)) {
      return ch.map(FileChannel.MapMode.READ_ONLY, slice.offset(), slice.length());
    }
  }

  private List<Path> files() throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.sorted().toList();
    }
  }

  @Test
  void aLeasedBlockReadsTheSameThroughItsSharedMemorySlice() throws Exception {
    try (RamTier tier = open()) {
      assertThat(tier.awaitReserved(10_000)).isTrue();
      assertThat(files()).as("one file per arena of 4 MiB").hasSize(2);
      for (Path f : files()) {
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(f)))
            .isEqualTo("rw-------");
      }
      for (int i = 0; i < 20; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
      }
      BlockKey key = Payloads.key(7);
      try (BlockLease lease = tier.get(key)) {
        SharedMemorySlice slice = lease.sharedMemory().orElseThrow();
        assertThat(slice.length()).isEqualTo(BLOCK);
        ByteBuffer copied = readAsAnotherProcess(slice);
        assertThat(Payloads.verify(key, copied)).isEqualTo(1);
        assertThat(slice.crc32c()).as("a put of a whole block keeps its CRC32C")
            .hasValue(Crc32c.of(Payloads.of(key, 1, BLOCK)));
        // the leased block cannot move or be reused while other blocks come and go
        for (int i = 0; i < 40; i++) {
          tier.delete(Payloads.key(i == 7 ? 99 : i));
          BlockKey other = Payloads.key(100 + i);
          tier.put(other, Payloads.of(other, 2, BLOCK));
        }
        tier.delete(key);
        assertThat(tier.contains(key)).isFalse();
        assertThat(Payloads.verify(key, readAsAnotherProcess(slice))).isEqualTo(1);
      }
    }
    assertThat(files()).as("files deleted on close").isEmpty();
  }

  @Test
  void aPinGivesEachBlocksSliceUntilItIsClosed() throws IOException {
    try (RamTier tier = open()) {
      List<BlockKey> keys = List.of(Payloads.key(1), Payloads.key(2), Payloads.key(3));
      for (BlockKey k : keys) {
        tier.put(k, Payloads.of(k, 5, BLOCK));
      }
      PrefixPin pin = tier.pinPrefix(keys, Duration.ofSeconds(30));
      assertThat(pin.blocks()).isEqualTo(3);
      for (int i = 0; i < 3; i++) {
        SharedMemorySlice slice = pin.sharedMemory(i).orElseThrow();
        assertThat(Payloads.verify(keys.get(i), readAsAnotherProcess(slice))).isEqualTo(5);
      }
      pin.close();
      assertThat(pin.sharedMemory(0)).as("no slice once the pin is closed").isEmpty();
    }
  }

  @Test
  void privateMemoryHasNoSlice() {
    try (RamTier tier = new RamTier(RamTierConfig.ofCapacity(1L << 20))) {
      BlockKey key = Payloads.key(1);
      tier.put(key, Payloads.of(key, 1, 4096));
      try (BlockLease lease = tier.get(key)) {
        assertThat(lease.status()).isEqualTo(GetStatus.HIT);
        assertThat(lease.sharedMemory()).isEmpty();
      }
    }
  }

  @Test
  void filesLeftByAProcessThatIsGoneAreDeletedAtStart() throws IOException {
    long gone = ProcessHandle.allProcesses().mapToLong(ProcessHandle::pid).max().orElse(1) + 1000;
    Path stale = Files.write(dir.resolve("kvcache-ram-" + gone + "-1-0"), new byte[4096]);
    Path foreign = Files.write(dir.resolve("other-file"), new byte[1]);
    Path live = Files.write(dir.resolve("kvcache-ram-" + ProcessHandle.current().pid() + "-0-0"),
        new byte[1]);
    long pid = ProcessHandle.current().pid();
    long started = ProcessHandle.current().info().startInstant().orElseThrow().toEpochMilli();
    Path running = Files.write(dir.resolve("kvcache-ram-" + pid + "-" + started + "-9-0"),
        new byte[1]);
    // a container's process 1 of the start before: the same id, another start time
    Path earlier = Files.write(dir.resolve("kvcache-ram-" + pid + "-" + (started - 60_000)
        + "-1-0"), new byte[4096]);
    try (RamTier tier = open()) {
      assertThat(stale).doesNotExist();
      assertThat(earlier).as("the same process id, started a minute earlier").doesNotExist();
      assertThat(foreign).exists();
      assertThat(live).as("a file of a process still running").exists();
      assertThat(running).as("a file of this very process").exists();
    }
  }

  @Test
  void noFileIsLeftOnceCloseReturnsThoughTheMemoryWasStillBeingReserved() throws IOException {
    for (int i = 0; i < 5; i++) {
      // closed at once: the reservation is still making its arenas (4 MiB files, zeroed)
      new RamTier(RamTierConfig.ofCapacity(64L << 20).withArenaBytes(4 << 20)
          .withSharedMemory(dir)).close();
      assertThat(files()).as("the directory once close returned").isEmpty();
    }
  }

  @Test
  void aTmpfsIsToldApartFromADisk() throws IOException {
    Path shm = Path.of("/dev/shm");
    assumeTrue(Files.isDirectory(shm) && Files.getFileStore(shm).type().equals("tmpfs"));
    assertThat(RamTier.isMemoryFileSystem(shm)).isTrue();
    Path root = Path.of("/");
    String rootType = Files.getFileStore(root).type();
    assumeTrue(Set.of("ext4", "xfs", "btrfs", "overlay").contains(rootType));
    assertThat(RamTier.isMemoryFileSystem(root)).as("/ is on %s", rootType).isFalse();
  }

  @Test
  void theSettingNamesADirectoryThatIsNotThere() {
    assertThatThrownBy(() -> KvCacheConfig.of(Map.of("ram.shared-memory-dir",
        dir.resolve("missing").toString())))
        .hasMessageContaining("setting 'ram.shared-memory-dir'")
        .hasMessageContaining("not a directory");
    assertThat(KvCacheConfig.of(Map.of("ram.shared-memory-dir", dir.toString()))
        .ramSharedMemoryDir()).isEqualTo(dir);
  }
}
