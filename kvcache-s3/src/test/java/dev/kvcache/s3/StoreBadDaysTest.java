package dev.kvcache.s3;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.Namespace;
import dev.kvcache.PrefixKeys;
import dev.kvcache.PutStatus;
import dev.kvcache.s3.internal.DeleteQueue;
import dev.kvcache.s3.internal.Download;
import dev.kvcache.s3.internal.ObjectNames;
import dev.kvcache.s3.internal.StoreState;
import dev.kvcache.s3.testkit.FaultyProxy;
import dev.kvcache.s3.testkit.FaultyProxy.Answer;
import dev.kvcache.s3.testkit.FaultyProxy.Mode;
import dev.kvcache.s3.testkit.InProcessS3;
import dev.kvcache.spi.Crc32c;
import dev.kvcache.testkit.Payloads;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;

/**
 * An object store's bad days, each played by a real S3 server behind the fault proxy: a burst of
 * throttling, throttling of a tenth of the requests, deletes the bucket refuses, a damaged object
 * whose delete fails, a folder left without its descriptor, a bucket larger than the index, and a
 * server that cannot find itself in its fleet. The tier loses no more hits than the store's
 * trouble costs, never deletes what it must not, and says what is wrong.
 */
@Tag("integration")
class StoreBadDaysTest {

  private static final int BLOCK = 64 << 10;
  private static final Namespace NS = Namespace.of("bad-days", "bf16", "tp0of1");
  private static InProcessS3 server;
  private static S3AsyncClient direct;

  private FaultyProxy proxy;
  private final List<S3Tier> tiers = new ArrayList<>();

  @BeforeAll
  static void startStore() throws Exception {
    server = new InProcessS3();
    direct = server.client();
  }

  @AfterAll
  static void stopStore() {
    direct.close();
    server.close();
  }

  @AfterEach
  void close() {
    tiers.forEach(S3Tier::close);
    if (proxy != null) {
      proxy.close();
    }
  }

  /** A tier through the fault proxy, which lists the bucket only when asked to. */
  private S3Tier throughProxy(S3TierConfig.Builder config) throws Exception {
    proxy = new FaultyProxy(server.endpoint());
    S3Tier tier = S3Tier.open(config.endpoint(proxy.endpoint()).listInterval(Duration.ZERO)
        .requestTimeout(Duration.ofSeconds(2)).build());
    tiers.add(tier);
    // the listing at start and this one are over, whichever ran first: no request of their own
    // comes after this
    assertThat(tier.listNow()).isTrue();
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (tier.s3Stats().listings() < 2 && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertThat(tier.s3Stats().listings()).isEqualTo(2);
    return tier;
  }

  private static List<BlockKey> keys(int n, int seed) {
    return PrefixKeys.of(NS, 4).keysFor(IntStream.range(0, 4 * n).map(i -> seed * 1000 + i)
        .toArray());
  }

  /** Stores each key's block, version 1, and checks that it is stored; returns the keys. */
  private static List<BlockKey> storeAll(S3Tier tier, List<BlockKey> keys) {
    for (BlockKey key : keys) {
      assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
    }
    return keys;
  }

  private static long requestsSent(S3Tier tier) {
    return tier.s3Stats().requests().values().stream().mapToLong(Long::longValue).sum();
  }

  private static boolean inBucket(String name) {
    try {
      direct.headObject(b -> b.bucket(InProcessS3.BUCKET).key(name)).join();
      return true;
    } catch (java.util.concurrent.CompletionException e) {
      if (e.getCause() instanceof NoSuchKeyException
          || e.getCause() instanceof software.amazon.awssdk.services.s3.model.S3Exception s
          && s.statusCode() == 404) {
        return false;
      }
      throw e;
    }
  }

  private static void putDirect(String name, ByteBuffer body, int crc32c) {
    direct.putObject(b -> b.bucket(InProcessS3.BUCKET).key(name)
            .metadata(Map.of(Download.CRC_METADATA, String.format("%08x", crc32c))),
        AsyncRequestBody.fromByteBuffer(body)).join();
  }

  private static String nameOf(String prefix, BlockKey key) {
    ObjectNames names = new ObjectNames(prefix);
    return names.block(ObjectNames.folder(key), key);
  }

  @Test
  void aBurstOfThrottlingCostsOnePauseAndThenOneProbe() throws Exception {
    S3Tier tier = throughProxy(server.config(64L << 20, "burst/"));
    List<BlockKey> keys = storeAll(tier, keys(8, 1));
    proxy.mode(Mode.SLOW_DOWN);
    ExecutorService pool = Executors.newFixedThreadPool(keys.size());
    try {
      assertThat(readAllAtOnce(pool, tier, keys)).containsOnly(GetStatus.MISS);
      assertThat(tier.s3Stats().pauses()).as("eight throttled reads at once: one pause")
          .isEqualTo(1);
      assertThat(tier.health().degraded()).isTrue();

      // still throttling when the pause ends: of eight callers at once, one probes
      Thread.sleep(StoreState.FIRST_PAUSE.toMillis() + 50);
      long sent = requestsSent(tier);
      assertThat(readAllAtOnce(pool, tier, keys)).containsOnly(GetStatus.MISS);
      assertThat(requestsSent(tier) - sent).as("requests after the pause: the probe").isEqualTo(1);
      assertThat(tier.s3Stats().pauses()).as("the probe failed: a second pause").isEqualTo(2);
    } finally {
      pool.shutdownNow();
    }

    // the store recovers: the tier serves again within the longest second pause and a probe
    proxy.mode(Mode.PASS);
    long deadline = System.nanoTime() + Duration.ofSeconds(2).toNanos();
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    GetStatus status = GetStatus.MISS;
    while (status != GetStatus.HIT && System.nanoTime() < deadline) {
      status = tier.getInto(keys.get(0), dst.clear());
      if (status != GetStatus.HIT) {
        Thread.sleep(20);
      }
    }
    assertThat(status).as("a hit within 2 s of the store's recovery").isEqualTo(GetStatus.HIT);
    assertThat(Payloads.verify(keys.get(0), dst.flip())).isEqualTo(1);
    assertThat(tier.health().degraded()).isFalse();
  }

  /**
   * Reads every key, each from a thread of the pool, all let go at once once every thread runs (a
   * pool's thread that started late would send its read after the pause the others began, as a
   * probe).
   */
  private static List<GetStatus> readAllAtOnce(ExecutorService pool, S3Tier tier,
      List<BlockKey> keys) throws Exception {
    CountDownLatch ready = new CountDownLatch(keys.size());
    CountDownLatch go = new CountDownLatch(1);
    List<Future<GetStatus>> reads = new ArrayList<>();
    for (BlockKey key : keys) {
      reads.add(pool.submit(() -> {
        ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
        ready.countDown();
        go.await();
        return tier.getInto(key, dst);
      }));
    }
    assertThat(ready.await(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
    go.countDown();
    List<GetStatus> statuses = new ArrayList<>();
    for (Future<GetStatus> read : reads) {
      statuses.add(read.get());
    }
    return statuses;
  }

  @Test
  void everyProbeReportsSoThatTheBackOffEndsWhenTheStoreAnswers() throws Exception {
    // a lookup's HEAD given up past its budget releases the probe but ends no back-off: a budget
    // long enough for the first connections after the pause
    S3Tier tier = throughProxy(server.config(64L << 20, "probes/")
        .lookupBudget(Duration.ofSeconds(5)));
    List<BlockKey> keys = storeAll(tier, keys(4, 7));
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    List<BlockKey> unknown = keys(3, 8);
    for (int probe = 0; probe < 3; probe++) {
      pause(tier);
      // the probes: a lookup's HEAD of a key the store does not hold (a 404 is an answer), a GET
      // of one, and a GET whose connection the store closes as it arrives (sent again at once)
      switch (probe) {
        case 0 -> assertThat(tier.lookupPrefix(unknown)).isZero();
        case 1 -> assertThat(tier.getInto(unknown.get(0), dst.clear()))
            .isEqualTo(GetStatus.MISS);
        default -> {
          proxy.dropNextRequest();
          assertThat(tier.getInto(keys.get(1), dst.clear())).isEqualTo(GetStatus.HIT);
        }
      }
      assertThat(tier.health().degraded()).as("probe %d answered", probe).isFalse();
      long gets = tier.s3Stats().requests().get("GET");
      assertThat(tier.getInto(keys.get(0), dst.clear())).isEqualTo(GetStatus.HIT);
      assertThat(tier.s3Stats().requests().get("GET")).isEqualTo(gets + 1);
    }
  }

  /** Fails requests until the tier backs off, then lets them through again once the pause ends. */
  private void pause(S3Tier tier) throws InterruptedException {
    long pauses = tier.s3Stats().pauses();
    proxy.mode(Mode.INTERNAL_ERROR);
    for (int i = 0; i < StoreState.FAILURES_TO_PAUSE; i++) {
      tier.getInto(keys(1, 9).get(0), ByteBuffer.allocateDirect(BLOCK));
    }
    assertThat(tier.s3Stats().pauses()).isEqualTo(pauses + 1);
    proxy.mode(Mode.PASS);
    Thread.sleep(StoreState.FIRST_PAUSE.toMillis() + 50);
  }

  @Test
  void aStoreThrottlingATenthOfRequestsCostsAlmostNoHits() throws Exception {
    S3Tier tier = throughProxy(server.config(64L << 20, "tenth/"));
    List<BlockKey> keys = storeAll(tier, keys(20, 2));
    Random dice = new Random(42); // the same throttled requests each run: one reader, in order
    proxy.rule(r -> dice.nextInt(10) == 0 ? Answer.error("503 Slow Down", "SlowDown") : null);
    int hits = 0;
    int reads = 0;
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    for (int round = 0; round < 10; round++) {
      for (BlockKey key : keys) {
        reads++;
        if (tier.getInto(key, dst.clear()) == GetStatus.HIT) {
          hits++;
          assertThat(Payloads.verify(key, dst.flip())).isEqualTo(1);
        }
      }
    }
    assertThat(proxy.answeredByRule()).as("requests throttled").isGreaterThan(reads / 20);
    assertThat(hits).as("hits of %d reads with a tenth of requests throttled", reads)
        .isGreaterThanOrEqualTo(reads * 95 / 100);
  }

  @Test
  void deletesTheBucketRefusesBackOffAndAreGivenUpWithoutPausingTheTier() throws Exception {
    S3Tier tier = throughProxy(server.config(4L * BLOCK, "refused/"));
    proxy.rule(r -> r.bulkDelete() ? Answer.refuseEachDeleted(r, "AccessDenied") : null);
    List<BlockKey> keys = storeAll(tier, keys(8, 3));
    Thread.sleep(1500);
    assertThat(tier.s3Stats().deletesRefused())
        .as("refusals of four deletes in 1.5 s: each tried again after 0.5 to 1 s, not at once")
        .isBetween(4L, 8L);
    assertThat(tier.health().degraded()).as("refused deletes are no outage").isFalse();
    assertThat(tier.s3Stats().pauses()).isZero();
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    assertThat(tier.getInto(keys.get(7), dst)).isEqualTo(GetStatus.HIT);

    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (tier.s3Stats().deletesAbandoned() < 4 && System.nanoTime() < deadline) {
      Thread.sleep(100);
    }
    S3Stats stats = tier.s3Stats();
    assertThat(stats.deletesAbandoned()).as("each evicted object given up once").isEqualTo(4);
    assertThat(stats.deletesRefused()).isEqualTo(4L * DeleteQueue.TRIES);
    assertThat(stats.deleteBacklog()).isZero();
    long requests = proxy.answeredByRule();
    Thread.sleep(1000);
    assertThat(proxy.answeredByRule()).as("no delete after giving up").isEqualTo(requests);

    // a bucket policy that denies DeleteObjects whole: refused as well, and no pause either
    proxy.rule(r -> r.bulkDelete() ? Answer.error("403 Forbidden", "AccessDenied") : null);
    storeAll(tier, keys(2, 4));
    deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
    while (tier.s3Stats().deletesRefused() == stats.deletesRefused()
        && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertThat(tier.s3Stats().deletesRefused()).isGreaterThan(stats.deletesRefused());
    assertThat(tier.s3Stats().pauses()).isZero();
    assertThat(tier.getInto(keys(2, 4).get(1), dst.clear())).isEqualTo(GetStatus.HIT);
  }

  @Test
  void aDamagedObjectWhoseDeleteFailsIsNeverDeletedWithoutItsCondition() throws Exception {
    S3Tier tier = throughProxy(server.config(64L << 20, "damaged/"));
    BlockKey key = keys(1, 5).get(0);
    String name = nameOf("damaged/", key);
    ByteBuffer good = Payloads.of(key, 1, BLOCK);
    int crc = Crc32c.of(good);
    ByteBuffer bad = Payloads.of(key, 1, BLOCK);
    bad.put(100, (byte) (bad.get(100) ^ 1));
    putDirect(name, bad, crc);
    AtomicBoolean replaced = new AtomicBoolean();
    proxy.rule(r -> {
      if (r.method().equals("DELETE") && replaced.compareAndSet(false, true)) {
        // another server stores the block afresh while this one's conditional delete fails
        putDirect(name, good.duplicate(), crc);
        return Answer.error("503 Service Unavailable", "ServiceUnavailable");
      }
      return r.method().equals("DELETE")
          ? Answer.error("503 Service Unavailable", "ServiceUnavailable") : null;
    });
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    assertThat(tier.getInto(key, dst)).as("damaged: refused").isEqualTo(GetStatus.MISS);
    assertThat(tier.s3Stats().damagedBlocks()).isEqualTo(1);
    long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
    while (!replaced.get() && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertThat(replaced).as("the conditional delete was sent").isTrue();
    proxy.mode(Mode.PASS);
    assertThat(tier.awaitDeletes(5_000)).isTrue();
    Thread.sleep(500); // a delete sent after the failure would have landed by now
    assertThat(inBucket(name)).as("the fresh copy survives").isTrue();
    assertThat(tier.s3Stats().requests().get("DELETE")).as("deletes sent: the conditional one")
        .isEqualTo(1);
  }

  @Test
  void aFolderWithoutItsDescriptorIsAskedForOncePerListing() throws Exception {
    S3Tier tier = throughProxy(server.config(64L << 20, "undescribed/"));
    String folder = "0123456789abcdef"; // a namespace dropped, some of its objects left
    for (int i = 0; i < 20; i++) {
      byte[] key = new byte[16];
      key[15] = (byte) i;
      putDirect("undescribed/" + folder + "/" + HexFormat.of().formatHex(key),
          ByteBuffer.wrap(new byte[] {1, 2, 3}), 0);
    }
    long gets = tier.s3Stats().requests().get("GET");
    assertThat(tier.listNow()).isTrue();
    assertThat(tier.listNow()).isTrue();
    assertThat(tier.s3Stats().lastListingObjects()).isEqualTo(20);
    assertThat(tier.s3Stats().requests().get("GET") - gets)
        .as("descriptor reads for two listings of 20 objects in one folder").isEqualTo(1);
  }

  @Test
  void theFirstListingHoldsNoMoreObjectsThanTheIndex() throws Exception {
    List<BlockKey> keys = keys(30, 6);
    try (S3Tier writer = S3Tier.open(server.config(64L << 20, "large/").build())) {
      for (BlockKey key : keys) {
        assertThat(writer.put(key, Payloads.of(key, 1, 4096))).isEqualTo(PutStatus.STORED);
      }
    }
    S3Tier tier = S3Tier.open(server.config(64L << 20, "large/").indexEntries(10)
        .listInterval(Duration.ZERO).build());
    tiers.add(tier);
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (tier.s3Stats().listings() == 0 && System.nanoTime() < deadline) {
      Thread.sleep(10); // the first listing, started at open
    }
    S3Stats first = tier.s3Stats();
    assertThat(first.lastListingObjects()).isEqualTo(30);
    assertThat(first.listingHeldPeak()).as("objects the first listing held at once")
        .isEqualTo(10);
    assertThat(tier.stats().blocks()).isEqualTo(10);
    // a server alone owns them all: those it had no room for are evicted, as the index would
    assertThat(tier.awaitDeletes(10_000)).isTrue();
    assertThat(keys.stream().filter(k -> inBucket(nameOf("large/", k))).count()).isEqualTo(10);
    assertThat(tier.listNow()).isTrue();
    assertThat(tier.s3Stats().lastListingObjects()).isEqualTo(10);
    assertThat(tier.s3Stats().listingHeldPeak()).as("later listings hold none").isZero();
  }

  @Test
  void aServerMissingFromItsFleetIsDegradedAndSaysWhatItSaw() throws Exception {
    S3Tier elsewhere = S3Tier.open(server.config(64L << 20, "lost/")
        .fleetDns("localhost:7070", "10.1.2.3:7070").build());
    tiers.add(elsewhere);
    assertThat(elsewhere.s3Stats().fleetMember()).isFalse();
    assertThat(elsewhere.health().degraded()).isTrue();
    assertThat(String.join("; ", elsewhere.health().problems()))
        .contains("not among the fleet's servers").contains("127.0.0.1:7070")
        .contains("headless Service");

    S3Tier behindAVirtualIp = S3Tier.open(server.config(64L << 20, "lost/")
        .fleetDns("192.0.2.1:7070", null).build());
    tiers.add(behindAVirtualIp);
    assertThat(behindAVirtualIp.health().problems()).singleElement().asString()
        .contains("[192.0.2.1:7070]");

    S3Tier found = S3Tier.open(server.config(64L << 20, "lost/")
        .fleetDns("localhost:7070", null).build());
    tiers.add(found);
    assertThat(found.s3Stats().fleetMember()).isTrue();
    assertThat(found.health().degraded()).isFalse();
  }
}
