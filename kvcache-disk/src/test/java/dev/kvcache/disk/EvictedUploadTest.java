package dev.kvcache.disk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.Namespace;
import dev.kvcache.PrefixKeys;
import dev.kvcache.PutStatus;
import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.testkit.Payloads;
import dev.kvcache.tiered.StackedTier;
import dev.kvcache.tiered.StackedTierConfig;
import dev.kvcache.tiered.StackedTierConfig.Upload;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The disk tier hands over what it evicts, and a stacked tier uploads only that: every block stays
 * a hit (on disk, or below it once evicted), with its own bytes; a block's namespace survives a
 * restart of the disk tier; a damaged record is never handed over; a new put of an evicted key
 * leaves no stale copy below.
 */
class EvictedUploadTest {

  private static final int BLOCK = 32 << 10;
  private static final long SUPER_BLOCK = 256 << 10;
  private static final Namespace LLAMA = Namespace.of("llama-3.1-8b", "bf16", "tp0of1", "up");

  @TempDir Path temp;

  private static DiskTier disk(Path dir) throws IOException {
    return DiskTier.open(DiskTierConfig.builder(dir, 4 * SUPER_BLOCK)
        .superBlockBytes(SUPER_BLOCK)
        .minFreeBytes(0)
        .syncPolicy(SyncPolicy.NONE)
        .build());
  }

  private static List<BlockKey> keys(int n, int seed) {
    int[] tokens = IntStream.range(0, n * 16).map(i -> seed * 1_000_000 + i).toArray();
    return PrefixKeys.of(LLAMA, 16).keysFor(tokens);
  }

  /**
   * Waits until the disk's background reclamation and the uploads are done.
   *
   * @return the disk's evictions
   */
  private static long settle(StackedTier tier) throws InterruptedException {
    long evicted;
    do {
      evicted = tier.upperStats().evictions();
      assertThat(tier.awaitUploads(10_000)).isTrue();
      Thread.sleep(300); // a reclamation pass of the disk tier's, if one is due
    } while (tier.upperStats().evictions() != evicted || tier.stackedStats().uploadsWaiting() > 0);
    return evicted;
  }

  /**
   * A put, tried again once the uploads are done if the disk had no room: what waits for upload
   * keeps its super-block's file, which counts in the disk's capacity until it is uploaded.
   */
  private static PutStatus putWaitingForUploads(StackedTier tier, BlockKey key)
      throws InterruptedException {
    PutStatus status = tier.put(key, Payloads.of(key, 1, BLOCK));
    if (status == PutStatus.REJECTED_NO_SPACE) {
      assertThat(tier.awaitUploads(10_000)).isTrue();
      status = tier.put(key, Payloads.of(key, 1, BLOCK));
    }
    return status;
  }

  @Test
  void whatTheDiskEvictsGoesBelowAndEveryBlockStaysAHit() throws Exception {
    List<BlockKey> keys = keys(80, 1); // 2.5 MiB through a disk of 1 MiB
    RamTier below = new RamTier(RamTierConfig.ofCapacity(16L << 20));
    try (StackedTier tier = new StackedTier(disk(temp.resolve("d")), below,
        StackedTierConfig.defaults().withUpload(Upload.EVICTED))) {
      for (BlockKey key : keys) {
        assertThat(putWaitingForUploads(tier, key)).isEqualTo(PutStatus.STORED);
      }
      long evicted = settle(tier);
      assertThat(evicted).isGreaterThan(keys.size() / 2);
      assertThat(tier.stackedStats().uploaded()).isEqualTo(evicted);
      assertThat(below.stats().blocks()).as("only what the disk evicted").isEqualTo(evicted);
      ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
      for (BlockKey key : keys) {
        assertThat(tier.getInto(key, dst.clear())).as("block %s", key).isEqualTo(GetStatus.HIT);
        assertThat(Payloads.verify(key, dst.flip())).isEqualTo(1);
      }
      assertThat(tier.stackedStats().backingHits()).isEqualTo(evicted);
      assertThat(tier.stats().leasesOpen()).isZero();
    }
  }

  @Test
  void aBlockEvictedAfterARestartCarriesItsNamespaceFromTheRecord() throws Exception {
    Path dir = temp.resolve("restart");
    // less than a super-block: the first run stays below the level at which the disk reclaims
    List<BlockKey> first = keys(4, 2);
    BlockKey unnamed = BlockKey.of(12345, 67890);
    try (DiskTier d = disk(dir)) {
      for (BlockKey key : first) {
        d.put(key, Payloads.of(key, 1, BLOCK));
      }
      d.put(unnamed, Payloads.of(unnamed, 1, BLOCK));
    }
    Map<BlockKey, BlockKey> handed = new ConcurrentHashMap<>();
    try (DiskTier d = disk(dir)) {
      d.onEviction(lease -> {
        try (lease) {
          assertThat(Payloads.verify(lease.key(), lease.bytes())).isEqualTo(1);
          handed.put(lease.key(), lease.key());
        }
      });
      for (BlockKey key : keys(80, 3)) { // pushes the first super-blocks out
        d.put(key, Payloads.of(key, 1, BLOCK));
      }
      // the reclaiming thread may still be handing a super-block over
      long deadline = System.nanoTime() + 10_000_000_000L;
      while (!handed.keySet().containsAll(first) && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      for (BlockKey key : first) {
        assertThat(handed).containsKey(key);
        assertThat(handed.get(key).namespace()).as("rebuilt from the record").contains(LLAMA);
      }
      assertThat(handed).containsKey(unnamed);
      assertThat(handed.get(unnamed).namespace()).isEmpty();
    }
  }

  @Test
  void aDamagedRecordIsNeverHandedOver() throws Exception {
    Path dir = temp.resolve("damaged");
    List<BlockKey> first = keys(4, 4);
    try (DiskTier d = disk(dir)) {
      for (BlockKey key : first) {
        d.put(key, Payloads.of(key, 1, BLOCK));
      }
    }
    Path file = DiskFiles.superBlocks(dir).get(0);
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ,
        StandardOpenOption.WRITE)) {
      ByteBuffer b = ByteBuffer.allocate(1);
      long at = 8192 + 1000; // the first record's payload starts on the second page
      ch.read(b, at);
      b.put(0, (byte) (b.get(0) ^ 0x40)).rewind();
      ch.write(b, at);
    }
    List<BlockKey> handed = new ArrayList<>();
    try (DiskTier d = disk(dir)) {
      d.onEviction(lease -> {
        try (lease) {
          handed.add(lease.key());
        }
      });
      for (BlockKey key : keys(80, 5)) {
        d.put(key, Payloads.of(key, 1, BLOCK));
      }
    }
    assertThat(handed).doesNotContain(first.get(0)).contains(first.get(1), first.get(2));
  }

  @Test
  void aNewPutOfAnEvictedKeyLeavesNoStaleCopyBelow() throws Exception {
    List<BlockKey> keys = keys(40, 6);
    RamTier below = new RamTier(RamTierConfig.ofCapacity(16L << 20));
    try (StackedTier tier = new StackedTier(disk(temp.resolve("stale")), below,
        StackedTierConfig.defaults().withUpload(Upload.EVICTED))) {
      for (BlockKey key : keys) {
        assertThat(putWaitingForUploads(tier, key)).isEqualTo(PutStatus.STORED);
      }
      settle(tier);
      BlockKey evicted = keys.get(0);
      assertThat(below.contains(evicted)).isTrue();
      assertThat(tier.put(evicted, Payloads.of(evicted, 2, BLOCK))).isEqualTo(PutStatus.STORED);
      assertThat(below.contains(evicted)).as("the older copy below is deleted").isFalse();
      try (BlockLease lease = tier.get(evicted)) {
        assertThat(Payloads.verify(evicted, lease.bytes())).isEqualTo(2);
      }
      assertThat(tier.delete(keys.get(1))).isTrue();
      assertThat(tier.contains(keys.get(1))).isFalse();
      assertThat(below.contains(keys.get(1))).isFalse();
    }
  }
}
