package dev.kvcache.disk;

import static dev.kvcache.testkit.TierAssertions.assertHolds;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.BlockWriter;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.disk.device.FaultyDevice;
import dev.kvcache.disk.internal.RecordLayout;
import dev.kvcache.spi.ChecksumMismatchException;
import dev.kvcache.spi.Crc32c;
import dev.kvcache.testkit.Payloads;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Block payloads written past the page cache ({@link DiskTierConfig#directWrites()}): what reads,
 * leases and a reopen see is what was put, whatever the length; every record larger than a page
 * has its pages to itself; mapped reads and leases held across direct writes into the same
 * super-block stay right; where the device takes no direct writes, or a direct write fails, the
 * tier goes on through the page cache or refuses that one put; a block that lies on pages is
 * written from its own memory, and refused if its bytes no longer have their checksum.
 */
class DirectWritesTest {

  /** Lengths around pages and the writes' chunks (a sealed 2 MiB block is 2 MiB + 29 bytes). */
  private static final int[] LENGTHS = {32, 4000, 4032, 4033, 4096, 4097, 65_536 + 3, 1 << 20,
      (1 << 20) + 1, (3 << 20) + 5, (2 << 20) + 29, (1 << 20) + 61_440, (1 << 20) + 61_441};

  @TempDir Path temp;

  private static DiskTierConfig.Builder config(Path dir) {
    return DiskTierConfig.builder(dir, 256L << 20).superBlockBytes(32L << 20).minFreeBytes(0)
        .maxBlockBytes(4 << 20).syncPolicy(SyncPolicy.NONE).scrubBytesPerSecond(0)
        .directWrites(true);
  }

  @Test
  void everyLengthReadsBackBeforeAndAfterAReopen() throws Exception {
    Path dir = temp.resolve("tier");
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      for (int i = 0; i < LENGTHS.length; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(tier.put(key, Payloads.of(key, 1, LENGTHS[i]))).isEqualTo(PutStatus.STORED);
        assertHolds(tier, key, 1, LENGTHS[i]);
      }
      for (int i = 0; i < LENGTHS.length; i++) { // the writer, in parts of 16 KiB and a tail
        BlockKey key = Payloads.key(100 + i);
        ByteBuffer src = Payloads.of(key, 2, LENGTHS[i]);
        try (BlockWriter w = tier.writer(key, LENGTHS[i])) {
          for (int at = 0; at < LENGTHS[i]; at += 16 << 10) {
            w.write(src.duplicate().position(at).limit(Math.min(LENGTHS[i], at + (16 << 10))));
          }
          assertThat(w.commit()).isEqualTo(PutStatus.STORED);
        }
        assertHolds(tier, key, 2, LENGTHS[i]);
      }
    }
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      for (int i = 0; i < LENGTHS.length; i++) {
        assertHolds(tier, Payloads.key(i), 1, LENGTHS[i]);
        assertHolds(tier, Payloads.key(100 + i), 2, LENGTHS[i]);
      }
    }
  }

  @Test
  void aRecordLargerThanAPageHasItsPagesToItself() throws Exception {
    Path dir = temp.resolve("tier");
    int[] lengths = {5000, 100, 9000, 10_000};
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      for (int i = 0; i < lengths.length; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(tier.put(key, Payloads.of(key, 1, lengths[i]))).isEqualTo(PutStatus.STORED);
      }
    }
    // the headers, found by their magic at 64-byte boundaries after the file's header page
    ByteBuffer file = ByteBuffer.wrap(Files.readAllBytes(dir.resolve("sb-00000001.kvsb")))
        .order(ByteOrder.LITTLE_ENDIAN);
    List<Integer> headers = new ArrayList<>();
    for (int at = RecordLayout.PAGE; at + 64 <= file.limit(); at += 64) {
      if (file.getInt(at) == RecordLayout.RECORD_MAGIC) {
        headers.add(at);
      }
    }
    int page = RecordLayout.PAGE;
    // 5000 bytes: a page of its own for the header, the payload from the next page, its tail page
    // its own: the 100-byte record starts on the page after it, and the 9000-byte record, which
    // may not share a page with it, takes a page for its header after that
    assertThat(headers).containsExactly(page + page - 64, 4 * page, 5 * page + page - 64,
        9 * page + page - 64);
  }

  @Test
  void leasesAndMappedReadsStayRightAcrossDirectWritesIntoTheirSuperBlock() throws Exception {
    Path dir = temp.resolve("tier");
    int length = (1 << 20) + 12_345;
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      BlockKey held = Payloads.key(0);
      tier.put(held, Payloads.of(held, 1, length));
      try (BlockLease old = tier.get(held)) {
        ByteBuffer view = old.bytes();
        assertThat(Payloads.verify(held, view.duplicate())).isEqualTo(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicInteger reads = new AtomicInteger();
        Thread reader = new Thread(() -> {
          try {
            while (!Thread.currentThread().isInterrupted()) {
              if (Payloads.verify(held, view.duplicate()) != 1) {
                throw new AssertionError("the held lease changed");
              }
              reads.incrementAndGet();
            }
          } catch (Throwable t) {
            failure.compareAndSet(null, t);
          }
        });
        reader.start();
        try {
          for (int v = 2; v < 12; v++) { // new records of the same key and of others, same file
            assertThat(tier.put(held, Payloads.of(held, v, length))).isEqualTo(PutStatus.STORED);
            BlockKey other = Payloads.key(v);
            assertThat(tier.put(other, Payloads.of(other, v, length))).isEqualTo(PutStatus.STORED);
            assertHolds(tier, held, v, length);
            assertHolds(tier, other, v, length);
          }
        } finally {
          reader.interrupt();
          reader.join();
        }
        assertThat(failure.get()).isNull();
        assertThat(reads.get()).isPositive();
        assertThat(Payloads.verify(held, view.duplicate())).isEqualTo(1);
      }
    }
  }

  @Test
  void aRecordWrittenWhereAnAbandonedWriterZeroedItsBytesReadsRight() throws Exception {
    Path dir = temp.resolve("tier");
    int length = 3 << 20;
    try (DiskTier tier = DiskTier.open(config(dir).build())) {
      BlockKey key = Payloads.key(1);
      ByteBuffer src = Payloads.of(key, 1, length);
      try (BlockWriter w = tier.writer(key, length)) {
        w.write(src.duplicate().limit(length / 2)); // half, then closed without a commit
      }
      assertThat(tier.contains(key)).isFalse();
      assertThat(tier.put(key, Payloads.of(key, 2, length))).isEqualTo(PutStatus.STORED);
      assertHolds(tier, key, 2, length);
    }
  }

  @Test
  void aDeviceWithoutDirectWritesGetsEveryWriteThroughThePageCache() throws Exception {
    FaultyDevice device = new FaultyDevice(1L << 30, 1);
    device.directAlignment(0);
    Map<FaultyDevice.Op, AtomicInteger> ops = countOps(device);
    try (DiskTier tier = DiskTier.open(config(temp.resolve("tier")).device(device.session())
        .build())) {
      for (int i = 0; i < LENGTHS.length; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(tier.put(key, Payloads.of(key, 1, LENGTHS[i]))).isEqualTo(PutStatus.STORED);
        assertHolds(tier, key, 1, LENGTHS[i]);
      }
    }
    assertThat(ops).doesNotContainKey(FaultyDevice.Op.WRITE_DIRECT);
    assertThat(ops.get(FaultyDevice.Op.WRITE).get()).isPositive();
  }

  @Test
  void aFailedDirectWriteRefusesThatPutAndLosesNothingElse() throws Exception {
    FaultyDevice device = new FaultyDevice(1L << 30, 2);
    AtomicInteger directWrites = new AtomicInteger();
    try (DiskTier tier = DiskTier.open(config(temp.resolve("tier")).device(device.session())
        .syncPolicy(SyncPolicy.ALWAYS).build())) {
      BlockKey kept = Payloads.key(0);
      assertThat(tier.put(kept, Payloads.of(kept, 1, 2 << 20))).isEqualTo(PutStatus.STORED);
      device.fault((op, path) -> op == FaultyDevice.Op.WRITE_DIRECT
          && directWrites.incrementAndGet() == 2 ? new IOException("EIO (injected)") : null);
      BlockKey failed = Payloads.key(1);
      assertThat(tier.put(failed, Payloads.of(failed, 1, 2 << 20)))
          .isEqualTo(PutStatus.REJECTED_NO_SPACE);
      assertThat(tier.contains(failed)).isFalse();
      assertThat(tier.health().degraded()).isTrue();
      BlockKey next = Payloads.key(2);
      assertThat(tier.put(next, Payloads.of(next, 1, 2 << 20))).isEqualTo(PutStatus.STORED);
      assertHolds(tier, kept, 1, 2 << 20);
      assertHolds(tier, next, 1, 2 << 20);
    }
    assertThat(directWrites.get()).as("direct writes tried").isGreaterThan(2);
    device.cutPower(); // under ALWAYS every acknowledged put survives, the refused one is gone
    try (DiskTier tier = DiskTier.open(config(temp.resolve("tier")).device(device.session())
        .build())) {
      assertHolds(tier, Payloads.key(0), 1, 2 << 20);
      assertHolds(tier, Payloads.key(2), 1, 2 << 20);
      assertThat(tier.contains(Payloads.key(1))).isFalse();
    }
  }

  @Test
  void aBlockOnPagesIsWrittenFromItsOwnMemoryAndDamageInItIsRefused() throws Exception {
    FaultyDevice device = new FaultyDevice(1L << 30, 3);
    Map<FaultyDevice.Op, AtomicInteger> ops = countOps(device);
    int length = (3 << 20) + 5;
    Path dir = temp.resolve("tier");
    BlockKey onPages = Payloads.key(1);
    BlockKey copied = Payloads.key(2);
    try (DiskTier tier = DiskTier.open(config(dir).device(device.session()).build())) {
      ByteBuffer src = pageAligned(onPages, 1, length);
      int crc = Crc32c.of(src.duplicate());
      assertThat(tier.putChecked(onPages, src, crc)).isEqualTo(PutStatus.STORED);
      // its 3 MiB of whole pages in one write from where they are, the 5 bytes left padded
      assertThat(ops.remove(FaultyDevice.Op.WRITE_DIRECT)).hasValue(2);
      // the same bytes not on a page: copied, a write per 1 MiB buffer
      ByteBuffer off = Payloads.of(copied, 1, length);
      assertThat(off.alignmentOffset(0, RecordLayout.PAGE)).isNotZero();
      assertThat(tier.put(copied, off)).isEqualTo(PutStatus.STORED);
      assertThat(ops.remove(FaultyDevice.Op.WRITE_DIRECT)).hasValue(4);

      // a byte of the block damaged after its checksum was taken: refused, nothing else lost
      BlockKey damaged = Payloads.key(3);
      ByteBuffer bad = pageAligned(damaged, 1, length);
      int badCrc = Crc32c.of(bad.duplicate());
      bad.put(2 << 20, (byte) (bad.get(2 << 20) ^ 1));
      assertThatThrownBy(() -> tier.putChecked(damaged, bad, badCrc))
          .isInstanceOf(ChecksumMismatchException.class);
      assertThat(tier.contains(damaged)).isFalse();
      assertHolds(tier, onPages, 1, length);
      assertHolds(tier, copied, 1, length);
    }
    try (DiskTier tier = DiskTier.open(config(dir).device(device.session()).build())) {
      assertHolds(tier, onPages, 1, length);
      assertHolds(tier, copied, 1, length);
      assertThat(tier.contains(Payloads.key(3))).isFalse();
    }
  }

  /** The payload of (key, version) in direct memory that starts on a page, as RAM's blocks do. */
  private static ByteBuffer pageAligned(BlockKey key, long version, int length) {
    int pages = (int) RecordLayout.alignUp(length, RecordLayout.PAGE);
    ByteBuffer b = ByteBuffer.allocateDirect(pages + RecordLayout.PAGE)
        .alignedSlice(RecordLayout.PAGE).limit(length).slice();
    Payloads.fill(b, key, version);
    return b.flip();
  }

  /** Counts each kind of operation the device runs from now on. */
  private static Map<FaultyDevice.Op, AtomicInteger> countOps(FaultyDevice device) {
    Map<FaultyDevice.Op, AtomicInteger> ops = new ConcurrentHashMap<>();
    device.fault((op, path) -> {
      ops.computeIfAbsent(op, o -> new AtomicInteger()).incrementAndGet();
      return null;
    });
    return ops;
  }
}
