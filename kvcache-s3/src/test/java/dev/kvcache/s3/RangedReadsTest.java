package dev.kvcache.s3;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.s3.testkit.InProcessS3;
import dev.kvcache.s3.testkit.S3Store;
import dev.kvcache.testkit.Payloads;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.core.async.AsyncResponseTransformer;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * Large objects read by ranged GETs at once, against a real S3 server on loopback: the bytes are
 * the block's on every read path, a byte damaged in any range is refused, and an object changed
 * under the index is read whole.
 */
@Tag("integration")
class RangedReadsTest {

  /** Three ranges and a short fourth. */
  private static final int LARGE = 3 * ObjectReads.RANGE_BYTES + 4099;
  @RegisterExtension static final S3Store store = new S3Store();

  private final List<S3Tier> opened = new ArrayList<>();

  @AfterEach
  void closeTiers() {
    opened.forEach(S3Tier::close);
  }

  private S3Tier open(S3TierConfig config) throws IOException {
    S3Tier tier = S3Tier.open(config);
    opened.add(tier);
    return tier;
  }

  private S3TierConfig config() {
    return store.server().config(1L << 30).maxBlockBytes(64 << 20).build();
  }

  private static String objectName(S3TierConfig config, BlockKey key) {
    return store.bucket().listObjectsV2(b -> b.bucket(InProcessS3.BUCKET).prefix(config.prefix()))
        .join().contents().stream().map(S3Object::key).filter(n -> n.endsWith(key.toHex()))
        .findFirst().orElseThrow();
  }

  @Test
  void aLargeBlockReadsWholeOnEveryPathInRangesAtOnce() throws Exception {
    S3TierConfig config = config();
    S3Tier first = open(config);
    BlockKey key = Payloads.key(1);
    BlockKey small = Payloads.key(2);
    assertThat(first.put(key, Payloads.of(key, 3, LARGE))).isEqualTo(PutStatus.STORED);
    assertThat(first.put(small, Payloads.of(small, 3, 2 * ObjectReads.RANGE_BYTES - 1)))
        .isEqualTo(PutStatus.STORED);

    ByteBuffer dst = ByteBuffer.allocateDirect(LARGE + 100).position(37);
    assertThat(first.getInto(key, dst)).isEqualTo(GetStatus.HIT);
    assertThat(dst.position()).isEqualTo(37 + LARGE);
    assertThat(Payloads.verify(key, dst.flip().position(37))).isEqualTo(3);
    try (BlockLease lease = first.get(key)) {
      assertThat(lease.status()).isEqualTo(GetStatus.HIT);
      assertThat(lease.length()).isEqualTo(LARGE);
      assertThat(Payloads.verify(key, lease.bytes())).isEqualTo(3);
    }
    List<BlockLease> all = first.getAll(List.of(small, key));
    try {
      assertThat(Payloads.verify(small, all.get(0).bytes())).isEqualTo(3);
      assertThat(Payloads.verify(key, all.get(1).bytes())).isEqualTo(3);
    } finally {
      all.forEach(BlockLease::close);
    }
    assertThat(first.rangedReads()).as("the large block's reads, not the small one's").isEqualTo(3);
    assertThat(first.getInto(key, ByteBuffer.allocateDirect(LARGE - 1)))
        .isEqualTo(GetStatus.BUFFER_TOO_SMALL);
  }

  @Test
  void aByteDamagedInAnyRangeIsRefusedCountedAndDeleted() throws Exception {
    S3TierConfig config = config();
    S3Tier first = open(config);
    BlockKey key = Payloads.key(3);
    first.put(key, Payloads.of(key, 5, LARGE));
    String name = objectName(config, key);
    GetObjectResponse stored = store.bucket().getObject(b -> b.bucket(InProcessS3.BUCKET).key(name),
        AsyncResponseTransformer.toBytes()).join().response();
    ByteBuffer damaged = Payloads.of(key, 5, LARGE);
    int at = 2 * ObjectReads.RANGE_BYTES + 12345; // inside the third range
    damaged.put(at, (byte) (damaged.get(at) ^ 0x04));
    store.bucket().putObject(b -> b.bucket(InProcessS3.BUCKET).key(name)
        .metadata(stored.metadata()), AsyncRequestBody.fromByteBuffer(damaged)).join();

    ByteBuffer dst = ByteBuffer.allocateDirect(LARGE);
    assertThat(first.getInto(key, dst)).isEqualTo(GetStatus.MISS);
    assertThat(dst.position()).as("nothing handed over").isZero();
    assertThat(first.s3Stats().damagedBlocks()).isEqualTo(1);
    assertThat(first.rangedReads()).isZero();
    assertThat(first.contains(key)).isFalse();
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (objectNames(config).contains(name) && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertThat(objectNames(config)).as("the damaged copy is deleted").doesNotContain(name);
  }

  @Test
  void anObjectOverwrittenWithAnotherLengthIsReadWholeAsItIsNow() throws Exception {
    S3TierConfig config = config();
    S3Tier first = open(config);
    S3Tier second = open(config);
    BlockKey key = Payloads.key(4);
    first.put(key, Payloads.of(key, 1, LARGE));
    int shorter = LARGE - ObjectReads.RANGE_BYTES; // still read by ranges, by the old length
    assertThat(second.put(key, Payloads.of(key, 2, shorter))).isEqualTo(PutStatus.STORED);

    try (BlockLease lease = first.get(key)) {
      assertThat(lease.status()).isEqualTo(GetStatus.HIT);
      assertThat(lease.length()).isEqualTo(shorter);
      assertThat(Payloads.verify(key, lease.bytes())).as("the object as it is now").isEqualTo(2);
    }
    assertThat(first.rangedReads()).as("read again by a single GET").isZero();
    assertThat(first.s3Stats().damagedBlocks()).isZero();
    ByteBuffer dst = ByteBuffer.allocateDirect(shorter);
    assertThat(first.getInto(key, dst)).as("the index learned the new length").isEqualTo(GetStatus.HIT);
    assertThat(Payloads.verify(key, dst.flip())).isEqualTo(2);
    assertThat(first.rangedReads()).isEqualTo(1);
  }

  private static List<String> objectNames(S3TierConfig config) {
    return store.bucket().listObjectsV2(b -> b.bucket(InProcessS3.BUCKET).prefix(config.prefix()))
        .join().contents().stream().map(S3Object::key).toList();
  }
}
