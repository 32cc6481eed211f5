package dev.kvcache.disk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.spi.BlockListener;
import dev.kvcache.testkit.Payloads;
import dev.kvcache.tiered.Durability;
import dev.kvcache.tiered.TieredCache;
import dev.kvcache.tiered.TieredCacheConfig;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What RAM over disk tells a listener is what each tier holds: a put is a store in RAM, an
 * eviction from RAM a removal there and, once its spill lands, a store on disk, a promotion a store
 * in RAM again, a delete a removal from both, and a damaged record a removal from disk once a read
 * refuses it. Replaying a workload's events gives each tier's contents.
 */
class BlockListenerTest {

  private static final int BLOCK = 256 << 10;

  @TempDir Path temp;

  /** The blocks each tier holds, as the events say, and every event in order. */
  private static final class Replay implements BlockListener {
    final Map<String, Set<BlockKey>> held = new HashMap<>();
    final List<String> events = new ArrayList<>();

    @Override
    public synchronized void stored(String tier, BlockKey key) {
      held.computeIfAbsent(tier, t -> new HashSet<>()).add(key);
      events.add("stored " + tier + " " + key);
    }

    @Override
    public synchronized void removed(String tier, BlockKey key) {
      held.computeIfAbsent(tier, t -> new HashSet<>()).remove(key);
      events.add("removed " + tier + " " + key);
    }

    synchronized Set<BlockKey> held(String tier) {
      return new HashSet<>(held.getOrDefault(tier, Set.of()));
    }

    synchronized long count(String event) {
      return events.stream().filter(e -> e.startsWith(event + " ")).count();
    }
  }

  /** A disk tier without its background scrub, so that reads are what find damage here. */
  private DiskTier disk() throws IOException {
    return DiskTier.open(DiskTierConfig.builder(temp.resolve("disk"), 64L << 20)
        .superBlockBytes(4L << 20).minFreeBytes(0).syncPolicy(SyncPolicy.NONE)
        .scrubBytesPerSecond(0).build());
  }

  private static TieredCache ramOver(DiskTier disk) {
    return new TieredCache(RamTierConfig.ofCapacity(4L << 20).withMaxBlockBytes(BLOCK), disk,
        new TieredCacheConfig(64, Duration.ofSeconds(30), true, false, Durability.RAM_FIRST, 2));
  }

  @Test
  void replayingTheEventsGivesWhatEachTierHolds() throws Exception {
    DiskTier disk = disk();
    try (TieredCache cache = ramOver(disk)) {
      Replay replay = new Replay();
      assertThat(cache.listen(replay)).isTrue();
      List<BlockKey> keys = new ArrayList<>();
      for (int i = 0; i < 40; i++) { // 10 MiB through 4 MiB of RAM
        BlockKey key = Payloads.key(i);
        keys.add(key);
        assertThat(cache.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
      }
      assertThat(cache.awaitSpills(Duration.ofSeconds(30))).isTrue();
      assertThat(replay.count("stored ram")).isEqualTo(40);
      assertThat(replay.count("removed ram")).isPositive();

      for (BlockKey key : keys.subList(0, 6)) { // spilled long ago: read back from disk, promoted
        assertThat(cache.getInto(key, ByteBuffer.allocate(BLOCK))).isEqualTo(GetStatus.HIT);
      }
      for (BlockKey key : keys.subList(20, 30)) {
        assertThat(cache.delete(key)).isTrue();
      }
      assertThat(cache.awaitSpills(Duration.ofSeconds(30))).isTrue();

      Set<BlockKey> onDisk = keys.stream().filter(disk::contains).collect(Collectors.toSet());
      assertThat(replay.held("disk")).isEqualTo(onDisk);
      assertThat(replay.held("ram")).hasSize((int) cache.ramStats().blocks());
      for (BlockKey key : keys.subList(20, 30)) {
        assertThat(replay.held("ram")).doesNotContain(key);
        assertThat(replay.held("disk")).doesNotContain(key);
      }
      for (BlockKey key : keys.subList(0, 6)) { // moved down (in either order), then read
        assertThat(replay.events).contains("removed ram " + key);
        assertThat(replay.events).containsSubsequence("stored ram " + key, "stored disk " + key);
      }
      assertThat(replay.count("stored ram")).isGreaterThan(40); // promotions are stores in RAM
    }
  }

  @Test
  void aDamagedRecordARefusedReadFindsIsARemovalFromDisk() throws Exception {
    DiskTier disk = disk();
    Replay replay = new Replay();
    assertThat(disk.listen(replay)).isTrue();
    BlockKey key = Payloads.key(7);
    assertThat(disk.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
    assertThat(replay.held("disk")).containsExactly(key);
    disk.close();

    Path file = DiskFiles.superBlocks(temp.resolve("disk")).get(0);
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.wrap(new byte[] {0x5a, 0x5a, 0x5a, 0x5a}), 64 << 10); // in the payload
    }
    try (DiskTier reopened = disk()) {
      Replay after = new Replay();
      reopened.listen(after);
      after.stored("disk", key); // what the events said before the restart
      try (BlockLease lease = reopened.get(key)) {
        assertThat(lease.status()).isEqualTo(GetStatus.MISS);
      }
      assertThat(after.held("disk")).isEmpty();
      assertThat(after.events).endsWith("removed disk " + key);
    }
  }
}
