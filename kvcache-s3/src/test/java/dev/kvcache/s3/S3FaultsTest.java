package dev.kvcache.s3;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.Namespace;
import dev.kvcache.PrefixKeys;
import dev.kvcache.PutStatus;
import dev.kvcache.s3.internal.StoreState;
import dev.kvcache.s3.testkit.FaultyProxy;
import dev.kvcache.s3.testkit.FaultyProxy.Mode;
import dev.kvcache.s3.testkit.InProcessS3;
import dev.kvcache.testkit.Payloads;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A store that throttles, fails, hangs or dies mid-answer (a real S3 server behind a proxy that
 * injects the fault): the tier answers misses and not-stored, never an error and never wrong
 * bytes, says so in its health, and comes back when the store does.
 */
class S3FaultsTest {

  private static final int BLOCK = 1 << 20;
  private static final Namespace NS = Namespace.of("faults", "bf16", "tp0of1");
  private static InProcessS3 server;

  private FaultyProxy proxy;
  private S3Tier tier;

  @BeforeAll
  static void startStore() throws Exception {
    server = new InProcessS3();
  }

  @AfterAll
  static void stopStore() {
    server.close();
  }

  @BeforeEach
  void open() throws Exception {
    proxy = new FaultyProxy(server.endpoint());
    tier = S3Tier.open(server.config(256L << 20).endpoint(proxy.endpoint())
        .requestTimeout(Duration.ofSeconds(1)).lookupBudget(Duration.ofMillis(200)).build());
  }

  @AfterEach
  void close() {
    tier.close();
    proxy.close();
  }

  private static List<BlockKey> keys(int n, int seed) {
    return PrefixKeys.of(NS, 4).keysFor(IntStream.range(0, 4 * n).map(i -> seed * 1000 + i)
        .toArray());
  }

  private void assertServesAgainOnceTheStorePasses(BlockKey stored) throws Exception {
    proxy.mode(Mode.PASS);
    BlockKey fresh = keys(1, 99).get(0);
    long deadline = System.nanoTime() + 60_000_000_000L;
    PutStatus status = PutStatus.NOT_ADMITTED;
    while (status != PutStatus.STORED && System.nanoTime() < deadline) {
      Thread.sleep(100);
      status = tier.put(fresh, Payloads.of(fresh, 1, BLOCK));
    }
    assertThat(status).isEqualTo(PutStatus.STORED);
    assertThat(tier.health().degraded()).isFalse();
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    assertThat(tier.getInto(stored, dst)).isEqualTo(GetStatus.HIT);
    assertThat(Payloads.verify(stored, dst.flip())).isEqualTo(2);
  }

  @Test
  void aThrottlingStoreGivesMissesAndNotStoredAndIsBackedOff() throws Exception {
    List<BlockKey> keys = keys(3, 1);
    assertThat(tier.put(keys.get(0), Payloads.of(keys.get(0), 2, BLOCK)))
        .isEqualTo(PutStatus.STORED);
    for (Mode fault : new Mode[] {Mode.SLOW_DOWN, Mode.INTERNAL_ERROR}) {
      proxy.mode(fault);
      assertThat(tier.put(keys.get(1), Payloads.of(keys.get(1), 1, BLOCK)))
          .as(fault.name()).isEqualTo(PutStatus.NOT_ADMITTED);
      for (int i = 0; i < StoreState.FAILURES_TO_PAUSE - 1; i++) {
        assertThat(tier.getInto(keys.get(0), ByteBuffer.allocateDirect(BLOCK)))
            .isEqualTo(GetStatus.MISS);
      }
      assertThat(tier.health().degraded()).isTrue();
      long sent = tier.s3Stats().requests().values().stream().mapToLong(Long::longValue).sum();
      for (int i = 0; i < 20; i++) { // backing off: these send nothing
        tier.getInto(keys.get(0), ByteBuffer.allocateDirect(BLOCK));
      }
      assertThat(tier.s3Stats().requests().values().stream().mapToLong(Long::longValue).sum())
          .as("requests sent while backing off").isLessThanOrEqualTo(sent + 1);
      assertServesAgainOnceTheStorePasses(keys.get(0));
    }
    assertThat(tier.s3Stats().errors().get("PUT")).isPositive();
    assertThat(tier.s3Stats().notStored()).isPositive();
  }

  @Test
  void aHangingStoreCostsAReadItsTimeoutAndALookupItsBudget() throws Exception {
    List<BlockKey> keys = keys(2, 2);
    tier.put(keys.get(0), Payloads.of(keys.get(0), 2, BLOCK));
    proxy.mode(Mode.HANG);
    long start = System.nanoTime();
    assertThat(tier.lookupPrefix(keys(2, 3))).isZero(); // unknown keys: HEADs that never answer
    assertThat(System.nanoTime() - start).as("within the lookup budget")
        .isLessThan(Duration.ofMillis(900).toNanos());
    start = System.nanoTime();
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    assertThat(tier.getInto(keys.get(0), dst)).isEqualTo(GetStatus.MISS);
    assertThat(dst.position()).isZero();
    assertThat(System.nanoTime() - start).as("within the request timeout and a little")
        .isLessThan(Duration.ofSeconds(5).toNanos());
    assertServesAgainOnceTheStorePasses(keys.get(0));
  }

  @Test
  void aConnectionClosedUnderARequestIsRetriedOnceAndCostsNoMiss() throws Exception {
    List<BlockKey> keys = keys(2, 5);
    for (BlockKey key : keys) {
      tier.put(key, Payloads.of(key, 2, BLOCK));
    }
    assertThat(tier.listNow()).isTrue(); // no listing under way: the GET is the next request
    proxy.dropNextRequest();
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    assertThat(tier.getInto(keys.get(0), dst)).isEqualTo(GetStatus.HIT);
    assertThat(Payloads.verify(keys.get(0), dst.flip())).isEqualTo(2);
    assertThat(tier.s3Stats().errors().get("GET")).isZero();
    assertThat(tier.health().degraded()).as("no back-off").isFalse();
    assertThat(tier.getInto(keys.get(1), dst.clear())).isEqualTo(GetStatus.HIT);
  }

  @Test
  void aStoreThatDiesMidAnswerLeavesTheDestinationUntouched() throws Exception {
    BlockKey key = keys(1, 4).get(0);
    tier.put(key, Payloads.of(key, 2, BLOCK));
    proxy.mode(Mode.CUT_ANSWERS);
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    assertThat(tier.getInto(key, dst)).isEqualTo(GetStatus.MISS);
    assertThat(dst.position()).as("no partial block handed over").isZero();
    try (BlockLease lease = tier.get(key)) {
      assertThat(lease.status()).isEqualTo(GetStatus.MISS);
    }
    assertServesAgainOnceTheStorePasses(key);
  }
}
