package dev.kvcache.s3;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.Namespace;
import dev.kvcache.PrefixKeys;
import dev.kvcache.PrefixLocation;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.s3.testkit.InProcessS3;
import dev.kvcache.testkit.Payloads;
import dev.kvcache.tiered.KvCacheConfig;
import dev.kvcache.tiered.StackedTier;
import dev.kvcache.tiered.TieredCache;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** RAM over disk over the object store, stacked from settings, as a server stacks them. */
class ThreeTierTest {

  private static final int BLOCK = 256 << 10;
  private static final Namespace NS = Namespace.of("qwen-test", "bf16", "tp0of1");
  private static InProcessS3 server;

  @TempDir Path temp;

  @BeforeAll
  static void startStore() throws Exception {
    server = new InProcessS3();
  }

  @AfterAll
  static void stopStore() throws Exception {
    server.close();
  }

  private Map<String, String> settings(String diskDir, String prefix) {
    return server.stackSettings(temp.resolve(diskDir), server.endpoint(), prefix);
  }

  private static List<BlockKey> prompt(int blocks) {
    int[] tokens = IntStream.range(0, blocks * 16).toArray();
    return PrefixKeys.of(NS, 16).keysFor(tokens);
  }

  @Test
  void blocksPutOnOneServerAreHitsOnAServerThatStartsWithEmptyRamAndDisk() throws Exception {
    List<BlockKey> keys = prompt(8);
    try (KvCache cache = KvCacheConfig.of(settings("a", "fleet1/")).open()) {
      assertThat(cache).isInstanceOf(TieredCache.class);
      StackedTier lower = (StackedTier) ((TieredCache) cache).lower();
      assertThat(lower.name()).isEqualTo("disk+s3");
      for (BlockKey key : keys) {
        assertThat(cache.put(key, Payloads.of(key, 4, BLOCK))).isEqualTo(PutStatus.STORED);
      }
      assertThat(((TieredCache) cache).awaitSpills(java.time.Duration.ofSeconds(10))).isTrue();
      assertThat(lower.awaitUploads(10_000)).isTrue();
      assertThat(lower.stackedStats().uploaded()).isEqualTo(keys.size());
      assertThat(lower.backingStats().blocks()).isEqualTo(keys.size());
      assertThat(((S3Tier) lower.backing()).s3Stats().requests().get("DELETE"))
          .as("storing new keys sends no deletes").isZero();
    }

    try (KvCache other = KvCacheConfig.of(settings("b", "fleet1/")).open()) {
      PrefixLocation where = other.locatePrefix(keys);
      assertThat(where.blocks()).isEqualTo(keys.size());
      assertThat(where.blocksIn("s3")).isEqualTo(keys.size());
      ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
      for (BlockKey key : keys) {
        assertThat(other.getInto(key, dst.clear())).isEqualTo(GetStatus.HIT);
        assertThat(Payloads.verify(key, dst.flip())).isEqualTo(4);
      }
      assertThat(other.locatePrefix(keys).blocksIn("ram")).as("promoted into RAM on read")
          .isEqualTo(keys.size());
    }
  }

  @Test
  void aPinnedLookupOfBlocksInTheBucketDownloadsNothingAndTheLoadDownloadsEachOnce()
      throws Exception {
    List<BlockKey> keys = prompt(6);
    try (KvCache cache = KvCacheConfig.of(settings("i", "fleet5/")).open()) {
      StackedTier lower = (StackedTier) ((TieredCache) cache).lower();
      for (BlockKey key : keys.subList(0, 4)) {
        cache.put(key, Payloads.of(key, 2, BLOCK));
      }
      assertThat(((TieredCache) cache).awaitSpills(java.time.Duration.ofSeconds(10))).isTrue();
      assertThat(lower.awaitUploads(10_000)).isTrue();
    }

    try (KvCache other = KvCacheConfig.of(settings("j", "fleet5/")).open()) {
      BlockKey onDisk = keys.get(2);
      assertThat(other.put(onDisk, Payloads.of(onDisk, 2, BLOCK))).isEqualTo(PutStatus.STORED);
      assertThat(((TieredCache) other).awaitSpills(java.time.Duration.ofSeconds(10))).isTrue();
      // blocks enough to push it out of RAM: it stays on this server's disk
      int[] tokens = IntStream.range(0, 24 * 16).map(t -> 1_000_000 + t).toArray();
      for (BlockKey filler : PrefixKeys.of(NS, 16).keysFor(tokens)) {
        other.put(filler, Payloads.of(filler, 3, BLOCK));
      }
      assertThat(((TieredCache) other).awaitSpills(java.time.Duration.ofSeconds(10))).isTrue();
      assertThat(other.locatePrefix(List.of(onDisk)).blocksIn("disk")).isEqualTo(1);
      StackedTier lower = (StackedTier) ((TieredCache) other).lower();
      S3Tier bucket = (S3Tier) lower.backing();
      long before = bucket.s3Stats().bytesDownloaded();

      try (PrefixPin pin = other.pinPrefix(keys, java.time.Duration.ofSeconds(30))) {
        assertThat(pin.blocks()).isEqualTo(4);
        assertThat(bucket.s3Stats().bytesDownloaded()).as("the pin downloads nothing")
            .isEqualTo(before);

        List<ByteBuffer> dsts = IntStream.range(0, 4)
            .mapToObj(i -> ByteBuffer.allocateDirect(BLOCK)).toList();
        GetStatus[] got = other.getAllInto(keys.subList(0, 4), dsts);
        for (int i = 0; i < 4; i++) {
          assertThat(got[i]).isEqualTo(GetStatus.HIT);
          assertThat(Payloads.verify(keys.get(i), dsts.get(i).flip())).isEqualTo(2);
        }
        assertThat(bucket.s3Stats().bytesDownloaded() - before)
            .as("one download for each block the bucket alone holds").isEqualTo(3L * BLOCK);
        ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
        assertThat(pin.getInto(2, dst)).as("the disk's copy, under its lease")
            .isEqualTo(GetStatus.HIT);
        assertThat(Payloads.verify(onDisk, dst.flip())).isEqualTo(2);
        assertThat(bucket.s3Stats().bytesDownloaded() - before).isEqualTo(3L * BLOCK);
      }
    }
  }

  @Test
  void aBlockHotInRamStaysInTheBucketWhileColderOnesAreEvicted() throws Exception {
    Map<String, String> small = settings("e", "fleet3/");
    // sixteen blocks: more than the blocks of one round and the RAM spills that may follow them,
    // far fewer than the 41 stored
    small.put("s3.capacity", (16 * BLOCK) + "B");
    List<BlockKey> keys = prompt(41);
    BlockKey hot = keys.get(0);
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    try (KvCache cache = KvCacheConfig.of(small).open()) {
      StackedTier lower = (StackedTier) ((TieredCache) cache).lower();
      cache.put(hot, Payloads.of(hot, 1, BLOCK));
      for (int round = 0; round < 10; round++) {
        assertThat(cache.getInto(hot, dst.clear())).isEqualTo(GetStatus.HIT); // from RAM
        for (int i = 1; i <= 4; i++) {
          BlockKey key = keys.get(4 * round + i);
          cache.put(key, Payloads.of(key, 1, BLOCK));
        }
        ((TieredCache) cache).awaitSpills(java.time.Duration.ofSeconds(10));
        lower.awaitUploads(10_000);
      }
      assertThat(lower.backingStats().evictions()).as("the bucket evicted").isPositive();
      assertThat(((S3Tier) lower.backing()).awaitDeletes(5_000)).isTrue();

      // another server, while this one runs (closing it would write RAM down again)
      try (KvCache other = KvCacheConfig.of(settings("f", "fleet3/")).open()) {
        assertThat(other.getInto(hot, dst.clear())).as("the block read from RAM all along")
            .isEqualTo(GetStatus.HIT);
        assertThat(Payloads.verify(hot, dst.flip())).isEqualTo(1);
        int held = 0;
        for (BlockKey key : keys.subList(1, keys.size())) {
          held += other.getInto(key, dst.clear()) == GetStatus.HIT ? 1 : 0;
        }
        assertThat(held).as("the colder blocks the bucket still holds").isLessThan(16);
      }
    }
  }

  @Test
  void uploadingWhatTheDiskEvictsPutsOnlyThoseBlocksInTheBucket() throws Exception {
    Map<String, String> evicted = settings("g", "fleet4/");
    evicted.put("stacked.upload", "evicted");
    List<BlockKey> keys = prompt(120); // 30 MiB through 4 MiB of RAM and 16 MiB of disk
    long uploaded; // blocks in the bucket
    try (KvCache cache = KvCacheConfig.of(evicted).open()) {
      StackedTier lower = (StackedTier) ((TieredCache) cache).lower();
      for (BlockKey key : keys) {
        PutStatus status = cache.put(key, Payloads.of(key, 3, BLOCK));
        assertThat(status).isIn(PutStatus.STORED, PutStatus.NOT_ADMITTED);
      }
      assertThat(((TieredCache) cache).awaitSpills(java.time.Duration.ofSeconds(10))).isTrue();
      long evictions;
      do { // the disk's background reclamation may still evict
        evictions = lower.upperStats().evictions();
        assertThat(lower.awaitUploads(10_000)).isTrue();
        Thread.sleep(300);
      } while (lower.upperStats().evictions() != evictions);
      assertThat(evictions).as("the disk evicted").isPositive();
      uploaded = lower.backingStats().blocks();
      assertThat(uploaded).isPositive().isLessThan(keys.size())
          .isLessThanOrEqualTo(lower.stackedStats().uploaded());
      // RAM may write a block down again while the disk hands its eviction over (then the stack
      // holds it in neither tier for a moment): the disk stores it anew and the bucket keeps its
      // copy, named by content. Both copies must then be the block that was put.
      ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
      for (BlockKey key : keys) {
        if (lower.upper().contains(key) && lower.backing().contains(key)) {
          assertThat(lower.upper().getInto(key, dst.clear())).isEqualTo(GetStatus.HIT);
          assertThat(Payloads.verify(key, dst.flip())).as("on the disk").isEqualTo(3);
          assertThat(lower.backing().getInto(key, dst.clear())).isEqualTo(GetStatus.HIT);
          assertThat(Payloads.verify(key, dst.flip())).as("in the bucket").isEqualTo(3);
        }
      }
    }
    // closing spills RAM to the disk, and a block stored on the disk anew leaves the bucket
    long inBucket;
    try (var client = server.client()) {
      inBucket = client.listObjectsV2(b -> b.bucket(InProcessS3.BUCKET).prefix("fleet4/")).join()
          .contents().stream().filter(o -> !o.key().endsWith("namespace.json")).count();
    }
    assertThat(inBucket).isPositive().isLessThanOrEqualTo(uploaded);
    try (KvCache other = KvCacheConfig.of(settings("h", "fleet4/")).open()) {
      ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
      int hits = 0;
      for (BlockKey key : keys) {
        if (other.getInto(key, dst.clear()) == GetStatus.HIT) {
          assertThat(Payloads.verify(key, dst.flip())).isEqualTo(3);
          hits++;
        }
      }
      assertThat(hits).as("what the first server's disk evicted, and only that")
          .isEqualTo(inBucket);
    }
  }

  @Test
  void reStoringKeysNeverDeletesTheObjectsTheFleetReads() throws Exception {
    List<BlockKey> keys = prompt(8);
    Map<String, String> one = settings("r", "fleet6/");
    one.put("stacked.upload-queue-blocks", "1");
    one.put("stacked.upload-threads", "1");
    try (KvCache cache = KvCacheConfig.of(one).open()) {
      StackedTier lower = (StackedTier) ((TieredCache) cache).lower();
      S3Tier objects = (S3Tier) lower.backing();
      for (BlockKey key : keys) {
        cache.put(key, Payloads.of(key, 3, BLOCK));
        ((TieredCache) cache).awaitSpills(java.time.Duration.ofSeconds(10));
        lower.awaitUploads(10_000); // one at a time: the queue holds one
      }
      assertThat(objects.stats().blocks()).isEqualTo(keys.size());
      // the engine stores the same prefix again, faster than one upload thread keeps up with:
      // most re-stores find the upload queue full
      for (int round = 0; round < 3; round++) {
        for (BlockKey key : keys) {
          assertThat(cache.put(key, Payloads.of(key, 3, BLOCK))).isEqualTo(PutStatus.STORED);
        }
      }
      assertThat(lower.stackedStats().uploadsDropped()).as("re-stores that found the queue full")
          .isPositive();
      ((TieredCache) cache).awaitSpills(java.time.Duration.ofSeconds(10));
      assertThat(lower.awaitUploads(10_000)).isTrue();
      assertThat(objects.s3Stats().requests().get("DELETE")).as("bulk deletes sent").isZero();
      assertThat(objects.s3Stats().deleteBacklog()).isZero();
      assertThat(objects.stats().blocks()).isEqualTo(keys.size());

      try (KvCache other = KvCacheConfig.of(settings("s", "fleet6/")).open()) {
        ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
        for (BlockKey key : keys) {
          assertThat(other.getInto(key, dst.clear())).as("another server reads " + key)
              .isEqualTo(GetStatus.HIT);
          assertThat(Payloads.verify(key, dst.flip())).isEqualTo(3);
        }
      }
    }
  }

  @Test
  void aDeleteReachesTheObjectStore() throws Exception {
    List<BlockKey> keys = prompt(2);
    try (KvCache cache = KvCacheConfig.of(settings("c", "fleet2/")).open()) {
      StackedTier lower = (StackedTier) ((TieredCache) cache).lower();
      for (BlockKey key : keys) {
        cache.put(key, Payloads.of(key, 1, BLOCK));
      }
      ((TieredCache) cache).awaitSpills(java.time.Duration.ofSeconds(10));
      lower.awaitUploads(10_000);
      assertThat(cache.delete(keys.get(0))).isTrue();
      assertThat(((S3Tier) lower.backing()).awaitDeletes(5_000)).isTrue();
    }
    try (KvCache other = KvCacheConfig.of(settings("d", "fleet2/")).open()) {
      assertThat(other.getInto(keys.get(0), ByteBuffer.allocateDirect(BLOCK)))
          .isEqualTo(GetStatus.MISS);
      assertThat(other.getInto(keys.get(1), ByteBuffer.allocateDirect(BLOCK)))
          .isEqualTo(GetStatus.HIT);
    }
  }
}
