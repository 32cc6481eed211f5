package dev.kvcache.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.BlockWriter;
import dev.kvcache.CacheStats;
import dev.kvcache.GetStatus;
import dev.kvcache.PrefixLocation;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.spi.ChecksumMismatchException;
import dev.kvcache.spi.Crc32c;
import dev.kvcache.spi.Tier;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The behaviour every {@link Tier} promises, as its users see it. A tier's test extends this class
 * and says how to build the tier; after every test the tier is closed and checked for leaked
 * leases and memory.
 *
 * <p>Tiers are built with a capacity of {@link #CAPACITY_BYTES} and a block limit of {@link
 * #MAX_BLOCK_BYTES}.
 *
 * <p>One class past the project's usual size on purpose: a tier's test inherits the whole contract
 * by extending it, and a contract spread over several base classes could be half inherited.
 */
@Tag("contract")
public abstract class TierContractTest {

  protected static final long CAPACITY_BYTES = 8L << 20;
  protected static final int MAX_BLOCK_BYTES = 1 << 20;
  protected static final int BLOCK = 64 << 10;

  protected Tier tier;

  /** A new, empty tier with the given budget and block limit. */
  protected abstract Tier newTier(long capacityBytes, int maxBlockBytes);

  /**
   * Checks, after the tier is closed, that it holds no memory any more. Tiers whose storage
   * outlives close (a disk tier) override this.
   */
  protected void assertNothingRetainedAfterClose(CacheStats stats) {
    assertThat(stats.bytesUsed()).as("bytes still allocated after close").isZero();
  }

  /**
   * Waits until work a tier does in the background after a put has answered (a copy written behind
   * to a lower tier) is done, so that its counters hold still. Tiers with such work override this.
   */
  protected void settle(Tier tier) {}

  /**
   * Whether the tier's pins hold their blocks under leases of this process, which {@link
   * PrefixPin#share} hands on. A tier that pins blocks elsewhere (a remote server) overrides this.
   */
  protected boolean pinsHoldLocalLeases() {
    return true;
  }

  /**
   * Whether the tier's pins read a block only when it is read through the pin, holding nothing
   * meanwhile (an object tier, whose pin costs no download): a block deleted since the pin then
   * reads as a miss, and one stored anew as its new bytes. Such a tier overrides this.
   */
  protected boolean pinsReadWhenRead() {
    return false;
  }

  /**
   * Whether {@link Tier#tryWriter} offers a writer at once on an empty tier with room, as the RAM
   * tier does, and a tiered cache whose commits need not wait for its lower tier. A tier that
   * never offers one (the default {@code tryWriter}) overrides this.
   */
  protected boolean offersWritersWithoutWaiting() {
    return true;
  }

  @RegisterExtension final LeakCheck leaks = new LeakCheck(this::assertNothingRetainedAfterClose);

  @BeforeEach
  void createTier() {
    tier = leaks.track(newTier(CAPACITY_BYTES, MAX_BLOCK_BYTES));
  }

  @Test
  void getIntoReturnsTheBytesPut() {
    BlockKey key = Payloads.key(1);
    assertThat(tier.put(key, Payloads.of(key, 7, BLOCK))).isEqualTo(PutStatus.STORED);

    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK + 100);
    dst.position(50);
    assertThat(tier.getInto(key, dst)).isEqualTo(GetStatus.HIT);
    assertThat(dst.position()).isEqualTo(50 + BLOCK);
    assertThat(Payloads.verify(key, dst.flip().position(50))).isEqualTo(7);
  }

  @Test
  void getIntoAHeapBufferWorksToo() {
    BlockKey key = Payloads.key(2);
    assertThat(tier.put(key, Payloads.of(key, 1, BLOCK + 13))).isEqualTo(PutStatus.STORED);
    ByteBuffer dst = ByteBuffer.allocate(BLOCK + 13);
    assertThat(tier.getInto(key, dst)).isEqualTo(GetStatus.HIT);
    assertThat(Payloads.verify(key, dst.flip())).isEqualTo(1);
  }

  @Test
  void leaseIsAReadOnlyViewOfTheBytesPut() {
    BlockKey key = Payloads.key(3);
    tier.put(key, Payloads.of(key, 9, BLOCK));
    try (BlockLease lease = tier.get(key)) {
      assertThat(lease.status()).isEqualTo(GetStatus.HIT);
      assertThat(lease.key()).isEqualTo(key);
      assertThat(lease.length()).isEqualTo(BLOCK);
      ByteBuffer bytes = lease.bytes();
      assertThat(bytes.isReadOnly()).isTrue();
      assertThat(bytes.position()).isZero();
      assertThat(bytes.remaining()).isEqualTo(BLOCK);
      assertThat(Payloads.verify(key, bytes)).isEqualTo(9);
      assertThatThrownBy(() -> bytes.put(0, (byte) 1)).isInstanceOf(ReadOnlyBufferException.class);
    }
  }

  @Test
  void aBlocksChecksumIsTheCrc32cOfItsBytesFromWriterToLease() {
    BlockKey whole = Payloads.key(30);
    BlockKey inParts = Payloads.key(31);
    ByteBuffer block = Payloads.of(whole, 3, BLOCK + 5);
    CRC32C expected = new CRC32C();
    expected.update(block.duplicate());
    assertThat(tier.put(whole, block)).isEqualTo(PutStatus.STORED);
    ByteBuffer other = Payloads.of(inParts, 4, BLOCK + 5);
    CRC32C expectedInParts = new CRC32C();
    expectedInParts.update(other.duplicate());
    try (BlockWriter writer = tier.writer(inParts, other.remaining())) {
      writer.write(other.duplicate().limit(1000));
      writer.write(other.duplicate().position(1000));
      if (writer.crc32c().isPresent()) {
        assertThat(writer.crc32c().getAsInt()).isEqualTo((int) expectedInParts.getValue());
      }
      assertThat(writer.commit()).isEqualTo(PutStatus.STORED);
    }
    settle(tier);
    for (BlockKey key : new BlockKey[] {whole, inParts}) {
      long crc = key == whole ? expected.getValue() : expectedInParts.getValue();
      try (BlockLease lease = tier.get(key)) {
        assertThat(lease.status()).isEqualTo(GetStatus.HIT);
        if (key == inParts) { // a block written through a writer keeps its checksum; one put whole may
          assertThat(lease.crc32c()).as("the lease's checksum").hasValue((int) crc);
        } else if (lease.crc32c().isPresent()) {
          assertThat(lease.crc32c().getAsInt()).isEqualTo((int) crc);
        }
      }
    }
  }

  @Test
  void putLeavesTheSourcePositionAlone() {
    BlockKey key = Payloads.key(4);
    ByteBuffer src = Payloads.of(key, 1, BLOCK);
    tier.put(key, src);
    assertThat(src.position()).isZero();
    assertThat(src.remaining()).isEqualTo(BLOCK);
  }

  @Test
  void putStoresOnlyTheBytesBetweenPositionAndLimit() {
    BlockKey key = Payloads.key(5);
    ByteBuffer padded = ByteBuffer.allocateDirect(BLOCK + 300);
    padded.position(100).limit(100 + BLOCK);
    Payloads.fill(padded.slice(), key, 3);
    tier.put(key, padded);
    try (BlockLease lease = tier.get(key)) {
      assertThat(lease.length()).isEqualTo(BLOCK);
      assertThat(Payloads.verify(key, lease.bytes())).isEqualTo(3);
    }
  }

  @Test
  void missesAreStatusesNotExceptions() {
    BlockKey key = Payloads.key(6);
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    assertThat(tier.getInto(key, dst)).isEqualTo(GetStatus.MISS);
    assertThat(dst.position()).isZero();
    try (BlockLease lease = tier.get(key)) {
      assertThat(lease.status()).isEqualTo(GetStatus.MISS);
      assertThat(lease.length()).isZero();
      assertThatThrownBy(lease::bytes).isInstanceOf(IllegalStateException.class);
    }
    assertThat(tier.contains(key)).isFalse();
    assertThat(tier.delete(key)).isFalse();
    assertThat(tier.stats().misses()).isEqualTo(2);
  }

  @Test
  void putReplacesTheBlockUnderTheSameKey() {
    BlockKey key = Payloads.key(7);
    tier.put(key, Payloads.of(key, 1, BLOCK));
    tier.put(key, Payloads.of(key, 2, 2 * BLOCK));
    try (BlockLease lease = tier.get(key)) {
      assertThat(lease.length()).isEqualTo(2 * BLOCK);
      assertThat(Payloads.verify(key, lease.bytes())).isEqualTo(2);
    }
  }

  @Test
  void putCheckedStoresBytesThatHaveTheirChecksumAndNothingElse() {
    BlockKey key = Payloads.key(9);
    assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
    int length = 2 * BLOCK + 5; // several pages and a part of one
    int crc = Crc32c.of(Payloads.of(key, 2, length));
    ByteBuffer damaged = Payloads.of(key, 2, length);
    damaged.put(BLOCK + 3, (byte) (damaged.get(BLOCK + 3) ^ 1)); // changed since its checksum

    assertThatThrownBy(() -> tier.putChecked(key, damaged, crc))
        .isInstanceOf(ChecksumMismatchException.class)
        .hasMessageContaining("nothing was stored");
    settle(tier);
    try (BlockLease lease = tier.get(key)) {
      assertThat(lease.status()).as("the block put before").isEqualTo(GetStatus.HIT);
      assertThat(lease.length()).isEqualTo(BLOCK);
      assertThat(Payloads.verify(key, lease.bytes())).isEqualTo(1);
    }

    ByteBuffer intact = Payloads.of(key, 2, length);
    assertThat(tier.putChecked(key, intact, crc)).isEqualTo(PutStatus.STORED);
    assertThat(intact.position()).isZero();
    settle(tier);
    try (BlockLease lease = tier.get(key)) {
      assertThat(lease.length()).isEqualTo(length);
      assertThat(Payloads.verify(key, lease.bytes())).isEqualTo(2);
    }
  }

  @Test
  void containsAndDelete() {
    BlockKey key = Payloads.key(8);
    tier.put(key, Payloads.of(key, 1, BLOCK));
    assertThat(tier.contains(key)).isTrue();
    assertThat(tier.delete(key)).isTrue();
    assertThat(tier.contains(key)).isFalse();
    assertThat(tier.delete(key)).isFalse();
    assertThat(tier.getInto(key, ByteBuffer.allocate(BLOCK))).isEqualTo(GetStatus.MISS);
  }

  @Test
  void aBlockLargerThanTheLimitIsRejectedAndNothingChanges() {
    BlockKey key = Payloads.key(9);
    tier.put(key, Payloads.of(key, 1, BLOCK));
    settle(tier);
    long used = tier.stats().bytesUsed();

    assertThat(tier.put(key, Payloads.of(key, 2, tier.maxBlockBytes() + 1)))
        .isEqualTo(PutStatus.REJECTED_TOO_LARGE);
    assertThat(tier.stats().rejections()).isEqualTo(1);
    assertThat(tier.stats().bytesUsed()).isEqualTo(used);
    try (BlockLease lease = tier.get(key)) {
      assertThat(Payloads.verify(key, lease.bytes())).isEqualTo(1);
    }
  }

  @Test
  void aBlockOfExactlyTheLimitIsStored() {
    BlockKey key = Payloads.key(10);
    assertThat(tier.put(key, Payloads.of(key, 1, tier.maxBlockBytes())))
        .isEqualTo(PutStatus.STORED);
    ByteBuffer dst = ByteBuffer.allocateDirect(tier.maxBlockBytes());
    assertThat(tier.getInto(key, dst)).isEqualTo(GetStatus.HIT);
    assertThat(Payloads.verify(key, dst.flip())).isEqualTo(1);
  }

  @Test
  void aTooSmallDestinationIsLeftUnchanged() {
    BlockKey key = Payloads.key(11);
    tier.put(key, Payloads.of(key, 1, BLOCK));
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK - 1);
    assertThat(tier.getInto(key, dst)).isEqualTo(GetStatus.BUFFER_TOO_SMALL);
    assertThat(dst.position()).isZero();
    assertThat(dst.get(0)).isZero();
  }

  @Test
  void aLeasedBlockSurvivesDeleteAndLaterPuts() {
    BlockKey key = Payloads.key(12);
    tier.put(key, Payloads.of(key, 1, BLOCK));
    BlockLease lease = tier.get(key);
    assertThat(tier.delete(key)).isTrue();
    assertThat(tier.contains(key)).isFalse();
    // Churn through more than the whole capacity: the leased bytes must not be reused.
    for (int i = 0; i < 2 * CAPACITY_BYTES / BLOCK; i++) {
      BlockKey other = Payloads.key(1000 + i);
      tier.put(other, Payloads.of(other, 1, BLOCK));
    }
    assertThat(Payloads.verify(key, lease.bytes())).isEqualTo(1);
    lease.close();
  }

  @Test
  void closingALeaseTwiceIsAnErrorAndReleasesOnce() {
    BlockKey key = Payloads.key(13);
    tier.put(key, Payloads.of(key, 1, BLOCK));
    BlockLease first = tier.get(key);
    BlockLease second = tier.get(key);
    assertThat(tier.stats().leasesOpen()).isEqualTo(2);
    first.close();
    assertThatThrownBy(first::close)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("already closed");
    assertThatThrownBy(first::bytes).isInstanceOf(IllegalStateException.class);
    assertThat(tier.stats().leasesOpen()).isEqualTo(1);
    // The second lease still pins valid bytes.
    assertThat(Payloads.verify(key, second.bytes())).isEqualTo(1);
    second.close();
    assertThat(tier.stats().leasesOpen()).isZero();
    try (BlockLease again = tier.get(key)) {
      assertThat(Payloads.verify(key, again.bytes())).isEqualTo(1);
    }
  }

  @Test
  void aMissLeaseMayBeClosedRepeatedly() {
    BlockKey stored = Payloads.key(15);
    assertThat(tier.put(stored, Payloads.of(stored, 2, BLOCK))).isEqualTo(PutStatus.STORED);
    settle(tier);
    CacheStats before = tier.stats();

    BlockKey absent = Payloads.key(14);
    BlockLease miss = tier.get(absent);
    assertThat(miss.status()).isEqualTo(GetStatus.MISS);
    assertThat(miss.key()).isEqualTo(absent);
    assertThat(miss.length()).isZero();
    miss.close();
    miss.close(); // unlike a hit's lease: nothing was held, so nothing to close twice
    miss.close();
    assertThat(miss.status()).isEqualTo(GetStatus.MISS);
    assertThatThrownBy(miss::bytes).isInstanceOf(IllegalStateException.class);

    CacheStats after = tier.stats();
    assertThat(after.leasesOpen()).as("leases open").isZero();
    assertThat(after.misses()).as("misses, however often the lease closed")
        .isEqualTo(before.misses() + 1);
    assertThat(after.hits()).as("hits").isEqualTo(before.hits());
    // the tier serves on: a hit's lease is counted open, then closed, as ever
    try (BlockLease hit = tier.get(stored)) {
      assertThat(hit.status()).isEqualTo(GetStatus.HIT);
      assertThat(tier.stats().leasesOpen()).isEqualTo(1);
      assertThat(Payloads.verify(stored, hit.bytes())).isEqualTo(2);
    }
    assertThat(tier.stats().leasesOpen()).isZero();
    assertThat(tier.stats().hits()).isEqualTo(before.hits() + 1);
    try (BlockLease again = tier.get(absent)) {
      assertThat(again.status()).isEqualTo(GetStatus.MISS);
    }
    assertThat(tier.stats().misses()).isEqualTo(before.misses() + 2);
  }

  @Test
  void lookupPrefixCountsLeadingKeysPresent() {
    List<BlockKey> keys = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      keys.add(Payloads.key(20 + i));
    }
    assertThat(tier.lookupPrefix(keys)).isZero();
    for (int i = 0; i < 4; i++) {
      tier.put(keys.get(i), Payloads.of(keys.get(i), 1, BLOCK));
    }
    tier.put(keys.get(5), Payloads.of(keys.get(5), 1, BLOCK));
    assertThat(tier.lookupPrefix(keys)).isEqualTo(4);
    assertThat(tier.lookupPrefix(List.of())).isZero();
    tier.delete(keys.get(0));
    assertThat(tier.lookupPrefix(keys)).isZero();
  }

  @Test
  void locatePrefixFindsWhatLookupPrefixCountsAndEstimatesOnceATierHasRead() {
    List<BlockKey> keys = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      keys.add(Payloads.key(80 + i));
    }
    assertThat(tier.locatePrefix(keys)).isEqualTo(PrefixLocation.NONE);
    for (int i = 0; i < 3; i++) {
      tier.put(keys.get(i), Payloads.of(keys.get(i), 1, BLOCK));
    }
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    for (int i = 0; i < 3; i++) {
      assertThat(tier.getInto(keys.get(i), dst.clear())).isEqualTo(GetStatus.HIT);
    }

    PrefixLocation location = tier.locatePrefix(keys);

    assertThat(location.blocks()).isEqualTo(tier.lookupPrefix(keys)).isEqualTo(3);
    assertThat(location.estimatedLoad()).as("timed from the reads just made").isPresent();
    assertThat(location.estimatedLoad().get()).isPositive();
    assertThatThrownBy(() -> tier.locatePrefix(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void aPrefixPinHoldsTheBlocksLookedUpUntilClosed() {
    List<BlockKey> keys = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      keys.add(Payloads.key(70 + i));
    }
    for (int i : new int[] {0, 1, 2, 4}) {
      tier.put(keys.get(i), Payloads.of(keys.get(i), 1, BLOCK));
    }
    try (PrefixPin pin = tier.pinPrefix(keys, Duration.ofMinutes(1))) {
      assertThat(pin.blocks()).isEqualTo(3);
      assertThat(tier.stats().leasesOpen()).isEqualTo(pinsReadWhenRead() ? 0 : 3);
      tier.delete(keys.get(0));
      tier.put(keys.get(1), Payloads.of(keys.get(1), 2, BLOCK));
      ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
      for (int i = 0; i < 3; i++) {
        assertThat(pin.key(i)).isEqualTo(keys.get(i));
        assertThat(pin.length(i)).isEqualTo(BLOCK);
        if (pinsReadWhenRead() && i == 0) {
          assertThat(pin.getInto(i, dst.clear())).as("deleted since").isEqualTo(GetStatus.MISS);
          assertThat(dst.position()).isZero();
          continue;
        }
        assertThat(pin.getInto(i, dst.clear())).isEqualTo(GetStatus.HIT);
        assertThat(Payloads.verify(keys.get(i), dst.flip())).as("the bytes looked up")
            .isEqualTo(pinsReadWhenRead() && i == 1 ? 2 : 1);
      }
      long[] version = {0};
      assertThat(pin.read(2, bytes -> version[0] = Payloads.verify(keys.get(2), bytes))).isTrue();
      assertThat(version[0]).isEqualTo(1);
      assertThat(pin.getInto(2, ByteBuffer.allocate(BLOCK - 1))).isEqualTo(GetStatus.BUFFER_TOO_SMALL);
      pin.close();
      assertThat(pin.getInto(0, dst.clear())).isEqualTo(GetStatus.MISS);
      assertThat(pin.read(0, bytes -> { })).isFalse();
    }
    assertThat(tier.stats().leasesOpen()).isZero();
    assertThat(tier.pinPrefix(List.of(Payloads.key(99)), Duration.ofSeconds(1)).blocks()).isZero();
  }

  @Test
  void aPrefixPinLetsGoWhenItsTimeoutPasses() throws InterruptedException {
    BlockKey key = Payloads.key(80);
    tier.put(key, Payloads.of(key, 1, BLOCK));
    PrefixPin pin = tier.pinPrefix(List.of(key), Duration.ofMillis(50));
    assertThat(pin.blocks()).isEqualTo(1);
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (!pin.isReleased() && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertThat(pin.isReleased()).isTrue();
    assertThat(pin.getInto(0, ByteBuffer.allocateDirect(BLOCK))).isEqualTo(GetStatus.MISS);
    assertThat(tier.stats().leasesOpen()).isZero();
    pin.close(); // after expiry: nothing to do
    assertThatThrownBy(() -> tier.pinPrefix(List.of(key), Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("timeout");
    assertThat(tier.stats().leasesOpen()).isZero();
  }

  @Test
  void aReadUnderWayWhenAPinExpiresFinishesOnTheBytesPinned() throws InterruptedException {
    BlockKey key = Payloads.key(81);
    tier.put(key, Payloads.of(key, 6, BLOCK));
    // Long enough for the read to start before the expiry on a loaded machine (a remote pin's
    // read must reach the server first); the read then outlasts the expiry.
    Duration timeout = Duration.ofMillis(500);
    PrefixPin pin = tier.pinPrefix(List.of(key), timeout);
    long[] seen = {0, 0};
    boolean read = pin.read(0, bytes -> {
      seen[0] = Payloads.verify(key, bytes.duplicate());
      tier.delete(key); // the block leaves the index; only the pin keeps its bytes
      sleepPast(timeout.plusMillis(100)); // the expiry is due meanwhile and must wait for this read
      for (int i = 0; i < 3 * CAPACITY_BYTES / BLOCK; i++) { // would reuse memory let go of
        BlockKey other = Payloads.key(1000 + i);
        tier.put(other, Payloads.of(other, 1, BLOCK));
      }
      seen[1] = Payloads.verify(key, bytes.duplicate());
    });
    assertThat(read).isTrue();
    assertThat(seen).containsExactly(6, 6);
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (!pin.isReleased() && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertThat(pin.isReleased()).isTrue();
    assertThat(tier.stats().leasesOpen()).isZero();
  }

  @Test
  void aSharedLeaseKeepsThePinnedBytesAfterThePinExpires() throws InterruptedException {
    BlockKey key = Payloads.key(82);
    tier.put(key, Payloads.of(key, 7, BLOCK));
    PrefixPin pin = tier.pinPrefix(List.of(key), Duration.ofMillis(100));
    Optional<BlockLease> shared = pin.share(0);
    if (!pinsHoldLocalLeases()) {
      assertThat(shared).as("nothing to share: the block is read through the pin").isEmpty();
      pin.close();
      return;
    }
    assertThat(shared).isPresent();
    BlockLease lease = shared.get();
    assertThat(lease.key()).isEqualTo(key);
    assertThat(lease.length()).isEqualTo(BLOCK);
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (!pin.isReleased() && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertThat(pin.isReleased()).isTrue();
    assertThat(pin.share(0)).isEmpty();
    assertThat(pin.getInto(0, ByteBuffer.allocateDirect(BLOCK))).isEqualTo(GetStatus.MISS);
    tier.delete(key);
    for (int i = 0; i < 3 * CAPACITY_BYTES / BLOCK; i++) { // would reuse memory let go of
      BlockKey other = Payloads.key(2000 + i);
      tier.put(other, Payloads.of(other, 1, BLOCK));
    }
    assertThat(Payloads.verify(key, lease.bytes())).as("the bytes shared").isEqualTo(7);
    assertThat(tier.stats().leasesOpen()).isPositive();
    lease.close();
    assertThat(tier.stats().leasesOpen()).as("let go of with the last shared lease").isZero();
    assertThatThrownBy(lease::close).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(lease::bytes).isInstanceOf(IllegalStateException.class);
  }

  private static void sleepPast(Duration d) {
    try {
      Thread.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Test
  void batchFormsReportEachBlock() {
    BlockKey a = Payloads.key(30);
    BlockKey b = Payloads.key(31);
    BlockKey tooBig = Payloads.key(32);
    PutStatus[] puts =
        tier.putAll(
            List.of(a, b, tooBig),
            List.of(
                Payloads.of(a, 1, BLOCK),
                Payloads.of(b, 2, BLOCK),
                Payloads.of(tooBig, 1, tier.maxBlockBytes() + 1)));
    assertThat(puts)
        .containsExactly(PutStatus.STORED, PutStatus.STORED, PutStatus.REJECTED_TOO_LARGE);

    ByteBuffer da = ByteBuffer.allocateDirect(BLOCK);
    ByteBuffer db = ByteBuffer.allocateDirect(BLOCK);
    ByteBuffer dc = ByteBuffer.allocateDirect(BLOCK);
    assertThat(tier.getAllInto(List.of(a, b, tooBig), List.of(da, db, dc)))
        .containsExactly(GetStatus.HIT, GetStatus.HIT, GetStatus.MISS);
    assertThat(Payloads.verify(a, da.flip())).isEqualTo(1);
    assertThat(Payloads.verify(b, db.flip())).isEqualTo(2);

    assertThatThrownBy(() -> tier.getAllInto(List.of(a, b), List.of(da)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("2 keys but 1");
  }

  @Test
  void getAllLeasesEachBlockInOrderAsGetDoes() {
    List<BlockKey> keys = new ArrayList<>();
    for (int i = 0; i < 20; i++) { // more than a tier reads at once
      keys.add(Payloads.key(3000 + i));
      if (i % 3 != 1) {
        assertThat(tier.put(keys.get(i), Payloads.of(keys.get(i), i, BLOCK)))
            .isEqualTo(PutStatus.STORED);
      }
    }
    settle(tier);
    CacheStats before = tier.stats();
    List<BlockLease> leases = tier.getAll(keys);
    try {
      assertThat(leases).hasSize(keys.size());
      for (int i = 0; i < keys.size(); i++) {
        BlockLease lease = leases.get(i);
        assertThat(lease.key()).isEqualTo(keys.get(i));
        if (i % 3 == 1) {
          assertThat(lease.status()).as("block %d, never put", i).isEqualTo(GetStatus.MISS);
        } else {
          assertThat(lease.status()).as("block %d", i).isEqualTo(GetStatus.HIT);
          assertThat(Payloads.verify(keys.get(i), lease.bytes())).isEqualTo(i);
        }
      }
      settle(tier);
      CacheStats after = tier.stats();
      assertThat(after.hits() - before.hits()).isEqualTo(13);
      assertThat(after.misses() - before.misses()).isEqualTo(7);
    } finally {
      leases.forEach(BlockLease::close);
    }
    assertThat(tier.getAll(List.of())).isEmpty();
    assertThatThrownBy(() -> tier.getAll(null)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void aBlockWrittenInPartsReadsBackWhole() {
    BlockKey key = Payloads.key(60);
    ByteBuffer whole = Payloads.of(key, 4, BLOCK + 5);
    try (BlockWriter writer = tier.writer(key, BLOCK + 5)) {
      assertThat(writer.rejection()).isEmpty();
      assertThat(writer.key()).isEqualTo(key);
      assertThat(writer.length()).isEqualTo(BLOCK + 5);
      ByteBuffer first = whole.duplicate().limit(1000);
      writer.write(first);
      assertThat(first.hasRemaining()).as("a write consumes its part").isFalse();
      ByteBuffer onHeap = ByteBuffer.allocate(BLOCK - 1000);
      onHeap.put(whole.duplicate().position(1000).limit(BLOCK)).flip();
      writer.write(onHeap);
      assertThat(writer.remaining()).isEqualTo(5);
      assertThat(tier.contains(key)).as("visible before its commit").isFalse();
      writer.write(whole.duplicate().position(BLOCK));
      assertThat(writer.remaining()).isZero();
      assertThat(writer.commit()).isEqualTo(PutStatus.STORED);
    }
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK + 5);
    assertThat(tier.getInto(key, dst)).isEqualTo(GetStatus.HIT);
    assertThat(Payloads.verify(key, dst.flip())).isEqualTo(4);
  }

  @Test
  void anAbandonedWriterLeavesTheOldBlockOrAMissNeverItsBytes() {
    BlockKey key = Payloads.key(61);
    tier.put(key, Payloads.of(key, 1, BLOCK));
    try (BlockWriter writer = tier.writer(key, BLOCK)) {
      writer.write(Payloads.of(key, 2, BLOCK));
      assertOldBlockOrMiss(key);
    }
    assertOldBlockOrMiss(key);
    BlockWriter closed = tier.writer(key, BLOCK);
    closed.close();
    assertThatThrownBy(() -> closed.write(ByteBuffer.allocate(10)))
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(closed::commit).isInstanceOf(IllegalStateException.class);
    assertOldBlockOrMiss(key);
  }

  private void assertOldBlockOrMiss(BlockKey key) {
    try (BlockLease lease = tier.get(key)) {
      if (lease.status() == GetStatus.HIT) {
        assertThat(Payloads.verify(key, lease.bytes())).isEqualTo(1);
      }
    }
  }

  @Test
  void aWriterTakesExactlyItsLength() {
    BlockKey key = Payloads.key(62);
    try (BlockWriter writer = tier.writer(key, BLOCK)) {
      ByteBuffer tooMuch = Payloads.of(key, 1, BLOCK + 1);
      assertThatThrownBy(() -> writer.write(tooMuch))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("does not fit");
      assertThat(tooMuch.position()).as("nothing taken from a part that does not fit").isZero();
      assertThat(writer.remaining()).isEqualTo(BLOCK);
      writer.write(Payloads.of(key, 1, BLOCK).limit(BLOCK - 1));
      assertThatThrownBy(writer::commit)
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("incomplete");
      writer.write(ByteBuffer.allocate(1));
      assertThat(writer.commit()).isEqualTo(PutStatus.STORED);
      assertThatThrownBy(writer::commit).isInstanceOf(IllegalStateException.class);
      assertThatThrownBy(() -> writer.write(ByteBuffer.allocate(1)))
          .isInstanceOf(IllegalStateException.class);
    }
    assertThat(tier.contains(key)).as("closing a committed writer keeps its block").isTrue();
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK + 1);
    assertThat(tier.getInto(key, dst)).isEqualTo(GetStatus.HIT);
    assertThat(dst.position()).as("the block's length").isEqualTo(BLOCK);
    assertThat(dst.get(BLOCK - 1)).as("the last byte, written on its own").isZero();
    assertThat(dst.flip().limit(BLOCK - 1))
        .isEqualTo(Payloads.of(key, 1, BLOCK).limit(BLOCK - 1));
  }

  @Test
  void aWriterOpenedWithoutWaitingIfAnyWorksAsAnyWriter() {
    BlockKey key = Payloads.key(64);
    Optional<BlockWriter> now = tier.tryWriter(key, BLOCK);
    assertThat(now.isPresent()).as("a writer offered at once on an empty tier")
        .isEqualTo(offersWritersWithoutWaiting());
    if (now.isPresent()) {
      try (BlockWriter writer = now.get()) {
        writer.write(Payloads.of(key, 6, BLOCK));
        assertThat(writer.commit()).isEqualTo(PutStatus.STORED);
      }
      ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
      assertThat(tier.getInto(key, dst)).isEqualTo(GetStatus.HIT);
      assertThat(Payloads.verify(key, dst.flip())).isEqualTo(6);
    } else {
      assertThat(tier.contains(key)).as("stored by a writer not offered").isFalse();
    }
    tier.tryWriter(key, MAX_BLOCK_BYTES + 1).ifPresent(tooLarge -> {
      assertThat(tooLarge.rejection()).contains(PutStatus.REJECTED_TOO_LARGE);
      tooLarge.close();
    });
    assertThatThrownBy(() -> tier.tryWriter(key, 0)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aWriterAboveTheLimitIsRejectedAtOnce() {
    BlockKey key = Payloads.key(63);
    try (BlockWriter writer = tier.writer(key, MAX_BLOCK_BYTES + 1)) {
      assertThat(writer.rejection()).contains(PutStatus.REJECTED_TOO_LARGE);
      assertThat(writer.remaining()).isZero();
      assertThatThrownBy(() -> writer.write(ByteBuffer.allocate(1)))
          .isInstanceOf(IllegalStateException.class).hasMessageContaining("rejected");
    }
    assertThat(tier.contains(key)).isFalse();
    assertThatThrownBy(() -> tier.writer(null, BLOCK)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> tier.writer(key, 0)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  protected void usedBytesNeverExceedCapacity() {
    for (int i = 0; i < 3 * CAPACITY_BYTES / BLOCK; i++) {
      BlockKey key = Payloads.key(100 + i);
      PutStatus status = tier.put(key, Payloads.of(key, 1, BLOCK + (i % 7) * 1000));
      assertThat(status).isIn(PutStatus.STORED, PutStatus.NOT_ADMITTED);
      assertThat(tier.stats().bytesUsed()).isLessThanOrEqualTo(tier.capacityBytes());
    }
    assertThat(tier.stats().evictions()).isPositive();
  }

  @Test
  void badArgumentsGetClearErrorsAndChangeNothing() {
    BlockKey key = Payloads.key(40);
    tier.put(key, Payloads.of(key, 1, BLOCK));
    settle(tier);
    CacheStats before = tier.stats();

    assertThatThrownBy(() -> tier.put(null, ByteBuffer.allocate(10)))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("key");
    assertThatThrownBy(() -> tier.put(key, null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("src");
    assertThatThrownBy(() -> tier.put(key, ByteBuffer.allocate(0)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("empty");
    assertThatThrownBy(() -> tier.get(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> tier.getInto(key, null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> tier.getInto(key, ByteBuffer.allocate(BLOCK).asReadOnlyBuffer()))
        .isInstanceOf(ReadOnlyBufferException.class);
    assertThatThrownBy(() -> tier.contains(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> tier.delete(null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> tier.lookupPrefix(null)).isInstanceOf(NullPointerException.class);

    assertThat(tier.stats().bytesUsed()).isEqualTo(before.bytesUsed());
    assertThat(tier.stats().blocks()).isEqualTo(before.blocks());
    try (BlockLease lease = tier.get(key)) {
      assertThat(Payloads.verify(key, lease.bytes())).isEqualTo(1);
    }
  }

  @Test
  void aClosedTierRefusesCallsButStillReportsStats() {
    BlockKey key = Payloads.key(50);
    tier.put(key, Payloads.of(key, 1, BLOCK));
    tier.close();
    tier.close(); // closing twice is harmless
    assertThatThrownBy(() -> tier.put(key, Payloads.of(key, 2, BLOCK)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
    assertThatThrownBy(() -> tier.get(key)).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> tier.getInto(key, ByteBuffer.allocate(BLOCK)))
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> tier.contains(key)).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> tier.delete(key)).isInstanceOf(IllegalStateException.class);
    assertThat(tier.stats().puts()).isEqualTo(1);
  }

  @Test
  void aLeaseOpenAtCloseStaysReadableUntilClosed() {
    BlockKey key = Payloads.key(51);
    tier.put(key, Payloads.of(key, 4, BLOCK));
    BlockLease lease = tier.get(key);
    tier.close();
    assertThat(Payloads.verify(key, lease.bytes())).isEqualTo(4);
    lease.close();
  }

  @Test
  void statsCountWhatHappened() {
    BlockKey key = Payloads.key(60);
    tier.put(key, Payloads.of(key, 1, BLOCK));
    tier.getInto(key, ByteBuffer.allocateDirect(BLOCK));
    tier.get(key).close();
    tier.getInto(Payloads.key(61), ByteBuffer.allocateDirect(BLOCK));
    tier.delete(key);
    CacheStats stats = tier.stats();
    assertThat(stats.puts()).isEqualTo(1);
    assertThat(stats.hits()).isEqualTo(2);
    assertThat(stats.misses()).isEqualTo(1);
    assertThat(stats.deletes()).isEqualTo(1);
    assertThat(stats.blocks()).isZero();
    assertThat(stats.leasesOpen()).isZero();
    assertThat(stats.capacityBytes()).isEqualTo(tier.capacityBytes());
    assertThat(stats.hitRatio()).isEqualTo(2.0 / 3);
  }
}
