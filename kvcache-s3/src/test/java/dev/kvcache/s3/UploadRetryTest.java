package dev.kvcache.s3;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.Namespace;
import dev.kvcache.PrefixKeys;
import dev.kvcache.PutStatus;
import dev.kvcache.s3.testkit.FaultyProxy;
import dev.kvcache.s3.testkit.FaultyProxy.Answer;
import dev.kvcache.s3.testkit.FaultyProxy.Mode;
import dev.kvcache.s3.testkit.InProcessS3;
import dev.kvcache.testkit.Payloads;
import dev.kvcache.tiered.KvCacheConfig;
import dev.kvcache.tiered.StackedStats;
import dev.kvcache.tiered.StackedTier;
import dev.kvcache.tiered.TieredCache;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Uploads from the disk to an object store that refuses them for a while, through the fault
 * proxy in front of a real S3 server: each is tried again, and the blocks reach the bucket once
 * the store takes them.
 */
@Tag("integration")
class UploadRetryTest {

  private static final int BLOCK = 256 << 10;
  private static final Namespace NS = Namespace.of("retry-test", "bf16", "tp0of1");
  private static InProcessS3 server;

  @TempDir Path temp;
  private FaultyProxy proxy;

  @BeforeAll
  static void startStore() throws Exception {
    server = new InProcessS3();
  }

  @AfterAll
  static void stopStore() {
    server.close();
  }

  @AfterEach
  void closeProxy() {
    if (proxy != null) {
      proxy.close();
    }
  }

  private Map<String, String> settings(String diskDir, URI endpoint, String prefix) {
    Map<String, String> s = server.stackSettings(temp.resolve(diskDir), endpoint, prefix);
    s.put("s3.request-timeout", "2s");
    return s;
  }

  @Test
  void blocksTheStoreRefusedReachTheBucketOnceItTakesThem() throws Exception {
    List<BlockKey> keys = PrefixKeys.of(NS, 16).keysFor(IntStream.range(0, 6 * 16).toArray());
    proxy = new FaultyProxy(server.endpoint());
    try (KvCache cache = KvCacheConfig.of(settings("a", proxy.endpoint(), "retried/")).open()) {
      StackedTier lower = (StackedTier) ((TieredCache) cache).lower();
      // the store refuses every upload, as one refuses now and then, or for a moment
      proxy.rule(r -> r.method().equals("PUT")
          ? Answer.error("500 Internal Server Error", "InternalError") : null);
      for (BlockKey key : keys) {
        assertThat(cache.put(key, Payloads.of(key, 3, BLOCK))).isEqualTo(PutStatus.STORED);
      }
      assertThat(((TieredCache) cache).awaitSpills(Duration.ofSeconds(10))).isTrue();
      long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      while (lower.stackedStats().uploadsRetried() < keys.size() && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      StackedStats refused = lower.stackedStats();
      assertThat(refused.uploadsRetried()).as("each refused upload waits to be tried again")
          .isGreaterThanOrEqualTo(keys.size());
      assertThat(refused.uploaded()).isZero();
      assertThat(refused.uploadsWaiting()).isEqualTo(keys.size());

      proxy.mode(Mode.PASS);
      assertThat(lower.awaitUploads(30_000)).as("the retries end").isTrue();
      StackedStats after = lower.stackedStats();
      assertThat(after.uploaded()).isEqualTo(keys.size());
      assertThat(after.uploadsDropped()).isZero();
      assertThat(after.uploadFailures()).isGreaterThanOrEqualTo(keys.size());
      assertThat(lower.backingStats().blocks()).isEqualTo(keys.size());
    }

    // a server with an empty disk finds every block in the bucket, byte for byte
    try (KvCache other = KvCacheConfig.of(settings("b", server.endpoint(), "retried/")).open()) {
      assertThat(other.locatePrefix(keys).blocksIn("s3")).isEqualTo(keys.size());
      ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
      for (BlockKey key : keys) {
        assertThat(other.getInto(key, dst.clear())).isEqualTo(GetStatus.HIT);
        assertThat(Payloads.verify(key, dst.flip())).isEqualTo(3);
      }
    }
  }

  @Test
  void anUploadTheStoreRefusesEveryTimeIsGivenUpAndTheDiskKeepsTheBlock() throws Exception {
    BlockKey key = PrefixKeys.of(NS, 16).keysFor(IntStream.range(1000, 1016).toArray()).get(0);
    proxy = new FaultyProxy(server.endpoint());
    try (KvCache cache = KvCacheConfig.of(settings("c", proxy.endpoint(), "given-up/")).open()) {
      StackedTier lower = (StackedTier) ((TieredCache) cache).lower();
      proxy.rule(r -> r.method().equals("PUT")
          ? Answer.error("500 Internal Server Error", "InternalError") : null);
      assertThat(cache.put(key, Payloads.of(key, 5, BLOCK))).isEqualTo(PutStatus.STORED);
      assertThat(((TieredCache) cache).awaitSpills(Duration.ofSeconds(10))).isTrue();
      // four tries, 1 + 4 + 16 seconds apart
      assertThat(lower.awaitUploads(40_000)).isTrue();
      StackedStats stats = lower.stackedStats();
      assertThat(stats.uploaded()).isZero();
      assertThat(stats.uploadsRetried()).isEqualTo(3);
      assertThat(stats.uploadsDropped()).as("given up after its fourth try").isEqualTo(1);
      assertThat(stats.uploadsWaiting()).isZero();
      assertThat(lower.backingStats().blocks()).isZero();
      ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
      assertThat(lower.getInto(key, dst)).as("the disk keeps it").isEqualTo(GetStatus.HIT);
      assertThat(Payloads.verify(key, dst.flip())).isEqualTo(5);
    }
  }
}
