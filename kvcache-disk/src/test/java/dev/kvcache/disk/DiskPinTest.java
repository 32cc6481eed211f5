package dev.kvcache.disk;

import static dev.kvcache.testkit.TestBytes.indexOf;
import static dev.kvcache.testkit.TestBytes.random;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The disk tier's prefix pin ({@link DiskPin}) holds the records of the leading keys without
 * reading them: a lookup costs no read of the blocks' bytes, each block is read and checked when
 * read through the pin, and a record damaged meanwhile is a miss there, never other bytes.
 */
class DiskPinTest {

  private static final int BLOCK = 256 << 10;

  @TempDir Path temp;

  private DiskTier open() throws Exception {
    return DiskTier.open(DiskTierConfig.builder(temp.resolve("tier"), 64L << 20)
        .superBlockBytes(8L << 20).minFreeBytes(0).syncPolicy(SyncPolicy.NONE)
        .scrubBytesPerSecond(0).build());
  }

  private static BlockKey key(int n) {
    return BlockKey.of(0x70696eL, n);
  }

  @Test
  void aPinReadsNoRecordUntilItsBlockIsReadAndADamagedOneIsAMissThen() throws Exception {
    List<BlockKey> keys = IntStream.range(0, 4).mapToObj(DiskPinTest::key).toList();
    try (DiskTier tier = open()) {
      for (int i = 0; i < keys.size(); i++) {
        assertThat(tier.put(keys.get(i), ByteBuffer.wrap(random(BLOCK, i))))
            .isEqualTo(PutStatus.STORED);
      }
    }
    Path sb = DiskFiles.superBlocks(temp.resolve("tier")).get(0);
    byte[] file = Files.readAllBytes(sb);
    int at = indexOf(file, Arrays.copyOf(random(BLOCK, 1), 64));
    assertThat(at).as("block 1's record in " + sb).isNotNegative();
    file[at + BLOCK / 2] ^= 0x10;
    Files.write(sb, file);

    try (DiskTier tier = open();
        PrefixPin pin = tier.pinPrefix(keys, Duration.ofMinutes(1))) {
      assertThat(pin.blocks()).as("pinned without reading: the damage is not seen yet")
          .isEqualTo(keys.size());
      assertThat(tier.diskStats().corruptBlocks()).isZero();
      ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
      assertThat(pin.getInto(1, dst)).isEqualTo(GetStatus.MISS);
      assertThat(dst.position()).isZero();
      assertThat(tier.diskStats().corruptBlocks()).isEqualTo(1);
      assertThat(tier.contains(keys.get(1))).as("the damaged block is dropped").isFalse();
      for (int i : new int[] {0, 2, 3}) {
        assertThat(pin.length(i)).isEqualTo(BLOCK);
        assertThat(pin.getInto(i, dst.clear())).isEqualTo(GetStatus.HIT);
        assertThat(dst.flip()).isEqualTo(ByteBuffer.wrap(random(BLOCK, i)));
      }
      BlockLease shared = pin.share(3).orElseThrow();
      pin.close();
      assertThat(shared.bytes()).as("a shared lease outlives the pin")
          .isEqualTo(ByteBuffer.wrap(random(BLOCK, 3)));
      shared.close();
    }
  }

  @Test
  void aPinnedRecordStaysReadableAfterItsKeyIsDeleted() throws Exception {
    try (DiskTier tier = open()) {
      assertThat(tier.put(key(0), ByteBuffer.wrap(random(BLOCK, 7)))).isEqualTo(PutStatus.STORED);
      try (PrefixPin pin = tier.pinPrefix(List.of(key(0), key(1)), Duration.ofMinutes(1))) {
        assertThat(pin.blocks()).isEqualTo(1);
        assertThat(tier.delete(key(0))).isTrue();
        ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
        assertThat(pin.getInto(0, dst)).isEqualTo(GetStatus.HIT);
        assertThat(dst.flip()).isEqualTo(ByteBuffer.wrap(random(BLOCK, 7)));
        assertThat(pin.read(0, bytes -> assertThat(bytes).isEqualTo(
            ByteBuffer.wrap(random(BLOCK, 7))))).isTrue();
      }
      assertThat(tier.stats().hits()).as("the pinned block").isEqualTo(1);
      assertThat(tier.stats().misses()).as("the first key not found").isEqualTo(1);
    }
  }
}
