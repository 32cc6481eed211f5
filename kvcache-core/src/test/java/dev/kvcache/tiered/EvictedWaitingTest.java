package dev.kvcache.tiered;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.testkit.Payloads;
import dev.kvcache.tiered.StackedTierConfig.Upload;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * With uploads of evicted blocks, a block the upper tier evicted is still held while its upload
 * waits: reads find it, and the stacked tier says it holds it, so that a RAM tier above that evicts
 * its own copy does not write it down again.
 */
class EvictedWaitingTest {

  private static final int BLOCK = 64 << 10;
  /** Eight blocks in the stacked tier's upper tier. */
  private static final RamTierConfig UPPER = RamTierConfig.ofCapacity(8L * BLOCK)
      .withMaxBlockBytes(BLOCK);

  private RamTier upper;
  private RamTier below;
  private GatedTier backing;
  private StackedTier stacked;

  private StackedTier open() {
    upper = new RamTier(UPPER);
    below = new RamTier(RamTierConfig.ofCapacity(64L << 20).withMaxBlockBytes(BLOCK));
    backing = new GatedTier(below);
    backing.hold(); // uploads wait
    stacked = new StackedTier(upper, backing, StackedTierConfig.defaults()
        .withUpload(Upload.EVICTED));
    return stacked;
  }

  @AfterEach
  void close() {
    backing.release();
    stacked.close();
    assertThat(upper.stats().leasesOpen()).as("upper tier leases left open").isZero();
  }

  @Test
  void anEvictedBlockWaitingForItsUploadIsReadFromTheUpperTiersLease() throws Exception {
    open();
    // an evicted block's lease keeps its memory until it is uploaded: puts past that find no room
    List<Integer> stored = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      if (stacked.put(Payloads.key(i), Payloads.of(Payloads.key(i), 3, BLOCK))
          == PutStatus.STORED) {
        stored.add(i);
      }
    }
    int waiting = 0;
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    for (int i : stored) {
      BlockKey key = Payloads.key(i);
      if (upper.contains(key)) {
        continue;
      }
      waiting++;
      // what a RAM tier above asks before it writes down a block it evicts
      assertThat(stacked.contains(key)).as("block %d, evicted, upload waiting", i).isTrue();
      assertThat(stacked.getInto(key, dst.clear())).isEqualTo(GetStatus.HIT);
      assertThat(Payloads.verify(key, dst.flip())).isEqualTo(3);
      try (BlockLease lease = stacked.get(key)) {
        assertThat(lease.status()).isEqualTo(GetStatus.HIT);
        assertThat(Payloads.verify(key, lease.bytes())).isEqualTo(3);
      }
      assertThat(stacked.getInto(key, ByteBuffer.allocate(BLOCK - 1)))
          .isEqualTo(GetStatus.BUFFER_TOO_SMALL);
    }
    assertThat(waiting).as("blocks the upper tier evicted").isPositive();
    assertThat(below.stats().blocks()).as("none uploaded yet").isZero();

    backing.release();
    assertThat(stacked.awaitUploads(10_000)).isTrue();
    assertThat(below.stats().blocks()).isEqualTo(waiting);
    for (int i : stored) {
      assertThat(stacked.getInto(Payloads.key(i), dst.clear())).isEqualTo(GetStatus.HIT);
      assertThat(Payloads.verify(Payloads.key(i), dst.flip())).isEqualTo(3);
    }
    assertThat(stacked.stats().leasesOpen()).isZero();
  }

  @Test
  void aBlockEvictedBeforeANewerPutOfItsKeyIsNotUploadedOverIt() throws Exception {
    RamTier ram = new RamTier(UPPER);
    GatedTier lateEvictions = new GatedTier(ram);
    upper = ram;
    below = new RamTier(RamTierConfig.ofCapacity(64L << 20).withMaxBlockBytes(BLOCK));
    backing = new GatedTier(below);
    stacked = new StackedTier(lateEvictions, backing, StackedTierConfig.defaults()
        .withUpload(Upload.EVICTED));
    BlockKey key = Payloads.key(0);
    assertThat(putWhenRoom(key, 1)).isEqualTo(PutStatus.STORED);
    // the upper tier evicts the first version, and hands it over only after the second is put
    lateEvictions.holdEvictionsOf = key;
    for (int i = 1; ram.contains(key); i++) {
      putWhenRoom(Payloads.key(i), 1);
    }
    assertThat(putWhenRoom(key, 2)).isEqualTo(PutStatus.STORED);
    lateEvictions.holdEvictionsOf = null;
    lateEvictions.handOverEvictions();
    assertThat(stacked.awaitUploads(10_000)).isTrue();

    // the second version evicted in turn: what the stacked tier holds of the key is that version
    for (int i = 100; ram.contains(key); i++) {
      putWhenRoom(Payloads.key(i), 1);
    }
    assertThat(stacked.awaitUploads(10_000)).isTrue();
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    assertThat(stacked.getInto(key, dst)).isEqualTo(GetStatus.HIT);
    assertThat(Payloads.verify(key, dst.flip())).as("the version read").isEqualTo(2);
  }

  /**
   * Puts a block, again once the uploads are done if the upper tier had no room: its evicted
   * blocks keep their memory until uploaded.
   */
  private PutStatus putWhenRoom(BlockKey key, int version) throws InterruptedException {
    PutStatus status = stacked.put(key, Payloads.of(key, version, BLOCK));
    if (status == PutStatus.REJECTED_NO_SPACE) {
      assertThat(stacked.awaitUploads(10_000)).isTrue();
      status = stacked.put(key, Payloads.of(key, version, BLOCK));
    }
    return status;
  }
}
