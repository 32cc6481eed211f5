package dev.kvcache.disk;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.nio.file.ExtendedOpenOption;
import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.testkit.Payloads;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Blocks that are not in the page cache read past it ({@link DiskTierConfig#directReads()}): a
 * block written past the page cache reads back whole through {@code getInto} and a lease, each
 * read counted; damage on the device is refused and the block dropped; leases on such copies stay
 * whole while other reads go on; blocks in the page cache, and a tier with direct reads off, read
 * through the mapping.
 */
class DirectReadsTest {

  private static final int BLOCK = 256 << 10;
  /** Where the first record's payload starts: its header ends the page after the file header. */
  private static final long FIRST_PAYLOAD = 8192;

  @TempDir Path temp;

  private static DiskTierConfig.Builder config(Path dir) {
    return DiskTierConfig.builder(dir, 256L << 20).superBlockBytes(32L << 20).minFreeBytes(0)
        .maxBlockBytes(4 << 20).syncPolicy(SyncPolicy.NONE).scrubBytesPerSecond(0)
        .directWrites(true).directReads(true);
  }

  private static void putAll(DiskTier tier, int blocks, int length) {
    for (int i = 0; i < blocks; i++) {
      BlockKey key = Payloads.key(i);
      assertThat(tier.put(key, Payloads.of(key, 1, length))).isEqualTo(PutStatus.STORED);
    }
  }

  /** Flips a byte of the first record's payload on the device, past the page cache. */
  private static void damageFirstRecordOnTheDevice(Path dir) throws Exception {
    damageFirstRecordOnTheDevice(dir, 4096);
  }

  /** Flips a byte of the page {@code into} bytes into the first record's payload. */
  private static void damageFirstRecordOnTheDevice(Path dir, long into) throws Exception {
    try (FileChannel ch = FileChannel.open(dir.resolve("sb-00000001.kvsb"),
        StandardOpenOption.READ, StandardOpenOption.WRITE, ExtendedOpenOption.DIRECT)) {
      // one page: the aligned slice of two pages is one page long, or two if they start aligned
      ByteBuffer page = ByteBuffer.allocateDirect(8192).alignedSlice(4096).limit(4096);
      long at = FIRST_PAYLOAD + into;
      assertThat(ch.read(page, at)).isEqualTo(4096);
      page.put(100, (byte) (page.get(100) ^ 0x5a));
      assertThat(ch.write(page.flip(), at)).isEqualTo(4096);
    }
  }

  @Test
  void blocksWrittenPastThePageCacheReadBackWholePastIt() throws Exception {
    int[] lengths = {BLOCK, BLOCK + 1, (1 << 20) + 4095, 3 << 20};
    try (DiskTier tier = DiskTier.open(config(temp.resolve("tier")).build())) {
      long expected = 0;
      for (int i = 0; i < lengths.length; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(tier.put(key, Payloads.of(key, 1, lengths[i]))).isEqualTo(PutStatus.STORED);
        ByteBuffer dst = ByteBuffer.allocateDirect(lengths[i] + 100).position(50);
        assertThat(tier.getInto(key, dst)).isEqualTo(GetStatus.HIT);
        assertThat(dst.position()).isEqualTo(50 + lengths[i]);
        assertThat(Payloads.verify(key, dst.flip().position(50))).isEqualTo(1);
        try (BlockLease lease = tier.get(key)) {
          assertThat(lease.length()).isEqualTo(lengths[i]);
          assertThat(Payloads.verify(key, lease.bytes())).isEqualTo(1);
        }
        expected += 2L * lengths[i];
        assertThat(tier.diskStats().directReadBytes()).as("bytes read past the page cache")
            .isEqualTo(expected);
      }
    }
  }

  @Test
  void damageOnTheDeviceIsRefusedAndTheBlockDropped() throws Exception {
    Path dir = temp.resolve("tier");
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      putAll(tier, 4, BLOCK);
      damageFirstRecordOnTheDevice(dir);
      assertThat(tier.getInto(Payloads.key(0), ByteBuffer.allocateDirect(BLOCK)))
          .isEqualTo(GetStatus.MISS);
      assertThat(tier.diskStats().corruptBlocks()).isEqualTo(1);
      assertThat(tier.contains(Payloads.key(0))).isFalse();
      for (int i = 1; i < 4; i++) {
        try (BlockLease lease = tier.get(Payloads.key(i))) {
          assertThat(Payloads.verify(Payloads.key(i), lease.bytes())).isEqualTo(1);
        }
      }
      assertThat(tier.diskStats().directReadBytes()).isEqualTo(4L * BLOCK);
    }
    try (DiskTier tier = DiskTier.open(config(dir).build())) { // and stays dropped
      assertThat(tier.contains(Payloads.key(0))).isFalse();
    }
  }

  @Test
  void damageInALaterChunkOfALongBlockIsRefusedByBothReads() throws Exception {
    int length = (3 << 20) + 5; // seven chunks: more than are in flight at once
    for (boolean lease : new boolean[] {false, true}) {
      Path dir = temp.resolve("tier-" + lease);
      try (DiskTier tier = DiskTier.open(config(dir).build())) {
        BlockKey key = Payloads.key(0);
        BlockKey other = Payloads.key(1);
        assertThat(tier.put(key, Payloads.of(key, 1, length))).isEqualTo(PutStatus.STORED);
        assertThat(tier.put(other, Payloads.of(other, 1, length))).isEqualTo(PutStatus.STORED);
        damageFirstRecordOnTheDevice(dir, (5L << 19) + 8192); // in the sixth chunk
        if (lease) {
          try (BlockLease l = tier.get(key)) {
            assertThat(l.status()).isEqualTo(GetStatus.MISS);
          }
        } else {
          ByteBuffer dst = ByteBuffer.allocateDirect(length + 10).position(10);
          assertThat(tier.getInto(key, dst)).isEqualTo(GetStatus.MISS);
          assertThat(dst.position()).as("the buffer's position, put back").isEqualTo(10);
        }
        assertThat(tier.diskStats().corruptBlocks()).isEqualTo(1);
        assertThat(tier.contains(key)).isFalse();
        try (BlockLease l = tier.get(other)) { // the block beside it reads back whole
          assertThat(Payloads.verify(other, l.bytes())).isEqualTo(1);
        }
      }
    }
  }

  @Test
  void aBatchReadsItsBlocksPastThePageCacheSeveralAtATime() throws Exception {
    Path dir = temp.resolve("tier");
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      int blocks = 16;
      putAll(tier, blocks, BLOCK);
      damageFirstRecordOnTheDevice(dir);
      List<BlockKey> keys = new ArrayList<>();
      for (int i = 0; i < blocks; i++) {
        keys.add(Payloads.key(i));
      }
      keys.add(Payloads.key(99)); // never stored
      List<BlockLease> leases = tier.getAll(keys);
      try {
        assertThat(leases).hasSize(blocks + 1);
        assertThat(leases.get(0).status()).as("the damaged block").isEqualTo(GetStatus.MISS);
        for (int i = 1; i < blocks; i++) {
          assertThat(leases.get(i).key()).isEqualTo(keys.get(i));
          assertThat(Payloads.verify(keys.get(i), leases.get(i).bytes())).isEqualTo(1);
        }
        assertThat(leases.get(blocks).status()).isEqualTo(GetStatus.MISS);
      } finally {
        leases.forEach(BlockLease::close);
      }
      assertThat(tier.diskStats().corruptBlocks()).isEqualTo(1);
      assertThat(tier.diskStats().directReadBytes()).isEqualTo((long) blocks * BLOCK);
      assertThat(tier.stats().leasesOpen()).as("leases open").isZero();
    }
  }

  @Test
  void aLeaseFromTheDeviceMeetsDamageAsAMiss() throws Exception {
    Path dir = temp.resolve("tier");
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      putAll(tier, 2, BLOCK);
      damageFirstRecordOnTheDevice(dir);
      try (BlockLease lease = tier.get(Payloads.key(0))) {
        assertThat(lease.status()).isEqualTo(GetStatus.MISS);
      }
      assertThat(tier.diskStats().corruptBlocks()).isEqualTo(1);
      assertThat(tier.diskStats().directReadBytes()).isEqualTo(BLOCK);
    }
  }

  @Test
  void leasesOnCopiesStayWholeWhileOtherReadsGoOn() throws Exception {
    try (DiskTier tier = DiskTier.open(config(temp.resolve("tier")).build())) {
      int blocks = 64;
      putAll(tier, blocks, BLOCK);
      List<BlockLease> open = new ArrayList<>();
      try {
        for (int round = 0; round < 3; round++) {
          for (int i = 0; i < blocks; i++) {
            BlockLease lease = tier.get(Payloads.key(i));
            assertThat(lease.status()).isEqualTo(GetStatus.HIT);
            if (i % 2 == 0) {
              open.add(lease); // held while the others' buffers go back to the pool and out again
            } else {
              lease.close();
            }
          }
          for (BlockLease lease : open) {
            assertThat(Payloads.verify(lease.key(), lease.bytes())).as("%s", lease.key())
                .isEqualTo(1);
          }
          open.forEach(BlockLease::close);
          open.clear();
        }
      } finally {
        open.forEach(BlockLease::close);
      }
      assertThat(tier.diskStats().directReadBytes()).isEqualTo(3L * blocks * BLOCK);
    }
  }

  @Test
  void blocksInThePageCacheAndATierWithDirectReadsOffReadThroughTheMapping() throws Exception {
    try (DiskTier tier = DiskTier.open(config(temp.resolve("buffered")).directWrites(false)
        .build())) {
      putAll(tier, 4, BLOCK); // written through the page cache, which keeps them
      for (int i = 0; i < 4; i++) {
        try (BlockLease lease = tier.get(Payloads.key(i))) {
          assertThat(Payloads.verify(Payloads.key(i), lease.bytes())).isEqualTo(1);
        }
      }
      assertThat(tier.diskStats().directReadBytes()).isZero();
    }
    try (DiskTier tier = DiskTier.open(config(temp.resolve("off")).directReads(false).build())) {
      putAll(tier, 4, BLOCK);
      for (int i = 0; i < 4; i++) {
        ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
        assertThat(tier.getInto(Payloads.key(i), dst)).isEqualTo(GetStatus.HIT);
        assertThat(Payloads.verify(Payloads.key(i), dst.flip())).isEqualTo(1);
      }
      assertThat(tier.diskStats().directReadBytes()).isZero();
    }
  }
}
