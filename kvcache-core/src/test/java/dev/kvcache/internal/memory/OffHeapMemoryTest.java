package dev.kvcache.internal.memory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.BlockKey;
import dev.kvcache.testkit.Payloads;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The off-heap allocator: granule rounding, alignment, best fit, coalescing and compaction. */
class OffHeapMemoryTest {

  private static final int G = OffHeapMemory.GRANULE_BYTES;
  private static final int MIB = 1 << 20;

  /** Writes a payload naming {@code key} into the block's memory. */
  private static void fill(OffHeapBlock block, BlockKey key) {
    Payloads.fill(block.memory().slice(block.offset(), block.length()), key, 1);
  }

  /** Checks the block's memory, at its current offset, still holds the payload of {@code key}. */
  private static void verify(OffHeapBlock block, BlockKey key) {
    assertThat(Payloads.verify(key, block.readOnlyView())).isEqualTo(1);
  }

  private static void assertPageAligned(OffHeapBlock block) {
    assertThat(block.offset() % G).as("offset of block").isZero();
    // alignmentOffset on a direct buffer checks the native address, not only the index
    assertThat(block.memory().alignmentOffset(block.offset(), G)).as("address alignment").isZero();
  }

  @Test
  void allocationsRoundUpToWholeGranules() {
    OffHeapMemory memory = new OffHeapMemory(MIB, MIB);
    assertThat(memory.capacityBytes()).isEqualTo(MIB);
    assertThat(memory.usedBytes()).isZero();

    OffHeapBlock one = memory.allocate(1, 1);
    assertThat(one.length()).isEqualTo(1);
    assertThat(one.allocatedBytes()).isEqualTo(G);
    assertThat(memory.usedBytes()).isEqualTo(G);

    OffHeapBlock exact = memory.allocate(2 * G, 1);
    assertThat(memory.usedBytes()).isEqualTo(3 * G);
    OffHeapBlock overByOne = memory.allocate(2 * G + 1, 1);
    assertThat(overByOne.allocatedBytes()).isEqualTo(3 * G);
    assertThat(memory.usedBytes()).isEqualTo(6 * G);
    assertThat(OffHeapMemory.allocatedBytesFor(2 * G + 1)).isEqualTo(3 * G);
    assertThat(OffHeapMemory.allocatedBytesFor(G)).isEqualTo(G);

    one.release();
    exact.release();
    overByOne.release();
    assertThat(memory.usedBytes()).isZero();
  }

  @Test
  void capacityIsRoundedDownToWholeGranules() {
    assertThat(new OffHeapMemory(MIB + G - 1, MIB).capacityBytes()).isEqualTo(MIB);
    assertThatThrownBy(() -> new OffHeapMemory(G - 1, MIB))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at least " + G);
    assertThatThrownBy(() -> new OffHeapMemory(MIB, G - 1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new OffHeapMemory(MIB, OffHeapMemory.MAX_ARENA_BYTES + 1))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void blocksArePageAlignedAndDoNotOverlap() {
    OffHeapMemory memory = new OffHeapMemory(MIB, MIB);
    List<OffHeapBlock> blocks = new ArrayList<>();
    int[] lengths = {1, 100, G, G + 1, 3 * G - 7, 10 * G};
    for (int i = 0; i < lengths.length; i++) {
      OffHeapBlock block = memory.allocate(lengths[i], 1);
      assertPageAligned(block);
      if (lengths[i] >= Payloads.HEADER_BYTES) {
        fill(block, Payloads.key(i));
      }
      blocks.add(block);
    }
    // every block kept its own bytes: none overlaps another
    for (int i = 0; i < lengths.length; i++) {
      if (lengths[i] >= Payloads.HEADER_BYTES) {
        verify(blocks.get(i), Payloads.key(i));
      }
    }
  }

  @Test
  void aReaderThatMustNotWaitIsToldWhileCompactionMovesTheBlock() throws Exception {
    Arena arena = new Arena(64 * G);
    OffHeapBlock block = arena.allocate(4 * G, 1);
    assertThat(block.tryPinForMove()).isTrue();
    assertThat(block.tryRetainUnlessMoving()).isEqualTo(OffHeapBlock.Retained.MOVING);
    java.util.concurrent.CompletableFuture<Boolean> waiting =
        java.util.concurrent.CompletableFuture.supplyAsync(block::tryRetain);
    Thread.sleep(50);
    assertThat(waiting).as("tryRetain waits for the move").isNotDone();
    block.finishMove();
    assertThat(waiting.get()).isTrue();
    assertThat(block.tryRetainUnlessMoving()).isEqualTo(OffHeapBlock.Retained.YES);
    block.release();
    block.release();
    block.releaseOwner();
    assertThat(block.tryRetainUnlessMoving()).isEqualTo(OffHeapBlock.Retained.FREED);
  }

  @Test
  void allocationIsBestFit() {
    Arena arena = new Arena(64 * G);
    // runs: [a:2][free 3][b:1][free 5][c:1][free 8][d: rest]
    OffHeapBlock a = arena.allocate(2 * G, 1);
    OffHeapBlock hole3 = arena.allocate(3 * G, 1);
    OffHeapBlock b = arena.allocate(G, 1);
    OffHeapBlock hole5 = arena.allocate(5 * G, 1);
    OffHeapBlock c = arena.allocate(G, 1);
    OffHeapBlock hole8 = arena.allocate(8 * G, 1);
    OffHeapBlock d = arena.allocate(arena.freeGranules() * G, 1);
    assertThat(arena.freeGranules()).isZero();
    hole3.release();
    hole5.release();
    hole8.release();

    OffHeapBlock four = arena.allocate(4 * G, 1);
    assertThat(four.offset()).as("4 granules go to the 5-granule run").isEqualTo(hole5.offset());
    OffHeapBlock three = arena.allocate(3 * G, 1);
    assertThat(three.offset()).as("3 granules go to the 3-granule run").isEqualTo(hole3.offset());
    OffHeapBlock one = arena.allocate(G, 1);
    assertThat(one.offset()).as("the 1-granule remainder of the 5-run is the best fit")
        .isEqualTo(hole5.offset() + 4 * G);
    assertThat(arena.allocate(9 * G, 1)).as("no run of 9 granules").isNull();
    assertThat(arena.compactions()).isZero();
    for (OffHeapBlock block : List.of(a, b, c, d, four, three, one)) {
      assertThat(block.memory()).isSameAs(arena.memory);
    }
  }

  @Test
  void freeingCoalescesWithBothNeighbours() {
    Arena arena = new Arena(12 * G);
    OffHeapBlock a = arena.allocate(3 * G, 1);
    OffHeapBlock b = arena.allocate(4 * G, 1);
    OffHeapBlock c = arena.allocate(5 * G, 1);
    assertThat(arena.freeGranules()).isZero();

    a.release();
    b.release(); // merges with the free run before it
    OffHeapBlock ab = arena.allocate(7 * G, 1);
    assertThat(ab).as("A+B fit after both were freed").isNotNull();
    assertThat(ab.offset()).isEqualTo(a.offset());
    assertThat(arena.compactions()).isZero();

    // free the outer blocks first, then the middle one: all three merge into one run
    ab.release();
    OffHeapBlock x = arena.allocate(3 * G, 1);
    OffHeapBlock y = arena.allocate(4 * G, 1);
    x.release();
    c.release();
    y.release(); // merges with free runs on both sides
    OffHeapBlock all = arena.allocate(12 * G, 1);
    assertThat(all).as("the whole arena after everything was freed").isNotNull();
    assertThat(all.offset()).isZero();
    assertThat(arena.compactions()).isZero();
  }

  @Test
  void freeingTheLaterBlockFirstCoalescesToo() {
    Arena arena = new Arena(12 * G);
    OffHeapBlock a = arena.allocate(3 * G, 1);
    OffHeapBlock b = arena.allocate(4 * G, 1);
    arena.allocate(5 * G, 1);
    b.release();
    a.release(); // merges with the free run after it
    assertThat(arena.allocate(7 * G, 1)).isNotNull();
    assertThat(arena.compactions()).isZero();
  }

  @Test
  void memoryReturnsWhenTheLastReferenceIsReleased() {
    OffHeapMemory memory = new OffHeapMemory(MIB, MIB);
    OffHeapBlock block = memory.allocate(10 * G, 2);
    assertThat(memory.usedBytes()).isEqualTo(10 * G);
    block.release();
    assertThat(memory.usedBytes()).as("one reference is left").isEqualTo(10 * G);
    assertThat(block.tryRetain()).isTrue();
    block.release();
    block.release();
    assertThat(memory.usedBytes()).isZero();
    assertThat(block.tryRetain()).as("a freed block cannot be retained again").isFalse();
    assertThatThrownBy(block::release)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("released more often than retained");
    assertThat(memory.usedBytes()).as("the failed release freed nothing twice").isZero();
  }

  @Test
  void aFullArenaReturnsNull() {
    OffHeapMemory memory = new OffHeapMemory(16 * G, MIB);
    OffHeapBlock block = memory.allocate(16 * G, 1);
    assertThat(block).isNotNull();
    assertThat(memory.allocate(1, 1)).isNull();
    block.release();
    assertThat(memory.allocate(16 * G, 1)).isNotNull();
  }

  /**
   * Fills a 256-granule memory with 64 blocks of 4 granules each and frees every other one: half
   * the memory is free, but only in runs of 4 granules.
   */
  private static List<OffHeapBlock> fragment(
      OffHeapMemory memory, Map<OffHeapBlock, BlockKey> keys) {
    List<OffHeapBlock> all = new ArrayList<>();
    for (int i = 0; i < 64; i++) {
      OffHeapBlock block = memory.allocate(3 * G + 100 + i, 1); // 4 granules, odd lengths
      assertThat(block).isNotNull();
      BlockKey key = Payloads.key(i);
      fill(block, key);
      keys.put(block, key);
      all.add(block);
    }
    assertThat(memory.usedBytes()).isEqualTo(memory.capacityBytes());
    List<OffHeapBlock> survivors = new ArrayList<>();
    for (int i = 0; i < 64; i++) {
      if (i % 2 == 0) {
        all.get(i).release();
        keys.remove(all.get(i));
      } else {
        survivors.add(all.get(i));
      }
    }
    assertThat(memory.usedBytes()).isEqualTo(128L * G);
    // survivors alternate with 4-granule holes, so no free run is longer than 4 granules
    List<Integer> offsets = survivors.stream().map(OffHeapBlock::offset).sorted().toList();
    for (int i = 1; i < offsets.size(); i++) {
      assertThat(offsets.get(i) - offsets.get(i - 1)).isEqualTo(8 * G);
    }
    assertThat(offsets.get(0)).isEqualTo(4 * G);
    assertThat(memory.compactions()).isZero();
    return survivors;
  }

  @Test
  void fragmentedFreeSpaceIsCompactedForALargeBlock() {
    OffHeapMemory memory = new OffHeapMemory(256 * G, MIB);
    Map<OffHeapBlock, BlockKey> keys = new IdentityHashMap<>();
    List<OffHeapBlock> survivors = fragment(memory, keys);
    Map<OffHeapBlock, Integer> offsetsBefore = new IdentityHashMap<>();
    survivors.forEach(b -> offsetsBefore.put(b, b.offset()));

    OffHeapBlock large = memory.allocate(128 * G, 1);

    assertThat(large).as("half the memory is free, so a half-size block fits").isNotNull();
    assertThat(memory.compactions()).isEqualTo(1);
    assertThat(memory.bytesCompacted()).isPositive();
    assertThat(memory.usedBytes()).isEqualTo(memory.capacityBytes());
    assertPageAligned(large);
    Payloads.fill(large.memory().slice(large.offset(), large.length()), Payloads.key(999), 1);
    long moved = survivors.stream().filter(b -> b.offset() != offsetsBefore.get(b)).count();
    assertThat(moved).as("blocks moved by compaction").isPositive();
    for (OffHeapBlock block : survivors) {
      verify(block, keys.get(block));
      assertPageAligned(block);
    }
    assertThat(Payloads.verify(Payloads.key(999), large.readOnlyView())).isEqualTo(1);

    // the moved blocks can still be freed where they now lie
    survivors.forEach(OffHeapBlock::release);
    large.release();
    assertThat(memory.usedBytes()).isZero();
    assertThat(memory.allocate(256 * G, 1)).isNotNull();
  }

  @Test
  void compactionDoesNotMoveARetainedBlock() {
    OffHeapMemory memory = new OffHeapMemory(256 * G, MIB);
    Map<OffHeapBlock, BlockKey> keys = new IdentityHashMap<>();
    List<OffHeapBlock> survivors = fragment(memory, keys);
    OffHeapBlock pinned = survivors.get(0); // granules 4..7, after the first hole
    assertThat(pinned.tryRetain()).isTrue(); // refs 2: the index and a reader
    int pinnedOffset = pinned.offset();
    ByteBuffer pinnedView = pinned.readOnlyView(); // what a reader holds while pinned

    // the pinned block splits the free space: 4 granules before it, 124 after compaction
    OffHeapBlock large = memory.allocate(124 * G, 1);

    assertThat(large).isNotNull();
    assertThat(memory.compactions()).isEqualTo(1);
    Payloads.fill(large.memory().slice(large.offset(), large.length()), Payloads.key(999), 1);
    assertThat(pinned.offset()).as("a retained block stays where it lies").isEqualTo(pinnedOffset);
    assertThat(Payloads.verify(keys.get(pinned), pinnedView)).isEqualTo(1);
    for (OffHeapBlock block : survivors) {
      verify(block, keys.get(block));
    }
    assertThat(memory.allocate(128 * G, 1)).as("the pinned block kept its run apart").isNull();
    pinned.release();
    verify(pinned, keys.get(pinned));
  }

  @Test
  void capacityBeyondOneArenaNeverSpansArenas() {
    OffHeapMemory memory = new OffHeapMemory(3L * MIB, MIB);
    assertThat(memory.capacityBytes()).isEqualTo(3L * MIB);
    List<OffHeapBlock> big = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      OffHeapBlock block = memory.allocate(768 << 10, 1);
      assertThat(block).as("768 KiB block %d", i).isNotNull();
      fill(block, Payloads.key(i));
      big.add(block);
    }
    assertThat(big.stream().map(OffHeapBlock::memory).distinct()).as("one per arena").hasSize(3);
    assertThat(memory.usedBytes()).isEqualTo(3L * (768 << 10));

    // 768 KiB are free in total, but only 256 KiB in any one arena
    assertThat(memory.allocate(512 << 10, 1)).isNull();
    for (int i = 0; i < 3; i++) {
      OffHeapBlock small = memory.allocate(256 << 10, 1);
      assertThat(small).isNotNull();
      assertThat(small.offset() + small.allocatedBytes())
          .as("block ends inside its arena")
          .isLessThanOrEqualTo(small.memory().capacity());
      assertPageAligned(small);
    }
    assertThat(memory.usedBytes()).isEqualTo(memory.capacityBytes());
    for (int i = 0; i < 3; i++) {
      verify(big.get(i), Payloads.key(i));
    }
  }

  @Test
  void blocksPutWhileTheArenasAreStillBeingMadeWaitForThemRatherThanFail() throws Exception {
    OffHeapMemory memory = new OffHeapMemory(256L * MIB, MIB);
    List<OffHeapBlock> blocks = new ArrayList<>();
    for (int i = 0; i < 256; i++) {
      OffHeapBlock block = memory.allocate(MIB, 1, CompactionBudget.NONE);
      assertThat(block).as("1 MiB block %d of a 256 MiB budget", i).isNotNull();
      fill(block, Payloads.key(i));
      blocks.add(block);
    }
    assertThat(memory.reserved()).isTrue();
    assertThat(memory.reservedBytes()).isEqualTo(memory.capacityBytes());
    assertThat(memory.usedBytes()).isEqualTo(memory.capacityBytes());
    assertThat(memory.allocate(G, 1)).as("every arena made, and full").isNull();
    for (int i = 0; i < 256; i++) {
      verify(blocks.get(i), Payloads.key(i));
    }
  }

  @Test
  void aHeldReservationWaitsForItsReleaseUnlessAPutNeedsTheMemory() throws Exception {
    OffHeapMemory.holdReservations();
    OffHeapMemory held;
    OffHeapMemory needed;
    try {
      held = new OffHeapMemory(4L * MIB, MIB);
      needed = new OffHeapMemory(4L * MIB, MIB);
      Thread.sleep(300);
      assertThat(held.reservedBytes()).as("nothing zeroed while held").isZero();
      assertThat(needed.allocate(MIB, 1)).as("a put does not wait for the release").isNotNull();
      assertThat(needed.awaitReserved(10_000)).isTrue();
      assertThat(held.reservedBytes()).as("the other memory still waits").isZero();
    } finally {
      OffHeapMemory.releaseReservations();
    }
    assertThat(held.awaitReserved(10_000)).as("zeroed once released").isTrue();
  }

  @Test
  void closingWhileTheArenasAreBeingMadeEndsTheirReservation() throws Exception {
    OffHeapMemory memory = new OffHeapMemory(512L * MIB, MIB);
    OffHeapBlock first = memory.allocate(MIB, 1);
    memory.close();
    memory.reserver().join(5_000);
    assertThat(memory.reserver().isAlive()).as("the reserving thread ended after the close").isFalse();
    assertThat(memory.reserved()).as("closed before all 512 arenas were made").isFalse();
    fill(first, Payloads.key(1));
    verify(first, Payloads.key(1));
  }

  @Test
  void aLastPartialArenaIsUsable() {
    OffHeapMemory memory = new OffHeapMemory(MIB + 64 * G, MIB);
    assertThat(memory.capacityBytes()).isEqualTo(MIB + 64 * G);
    assertThat(memory.allocate(MIB, 1)).isNotNull();
    assertThat(memory.allocate(64 * G, 1)).isNotNull();
    assertThat(memory.usedBytes()).isEqualTo(memory.capacityBytes());
  }

  @Test
  void capacityBeyondMaxDirectMemoryFailsWithAClearMessage() {
    // surefire runs with -XX:MaxDirectMemorySize=2g: the third 1 GiB arena cannot be reserved
    try {
      assertThatThrownBy(() -> new OffHeapMemory(3L << 30, OffHeapMemory.MAX_ARENA_BYTES))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("MaxDirectMemorySize");
    } finally {
      System.gc(); // let the arenas reserved before the failure go
    }
  }

  @Test
  void anAbsurdCapacityFailsWithIllegalStateException() {
    assertThatThrownBy(() -> new OffHeapMemory(Long.MAX_VALUE / 4, OffHeapMemory.MAX_ARENA_BYTES))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("MaxDirectMemorySize");
  }
}
