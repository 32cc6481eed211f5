package dev.kvcache.s3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.Namespace;
import dev.kvcache.PutStatus;
import dev.kvcache.s3.internal.ObjectNames;
import dev.kvcache.s3.testkit.InProcessS3;
import dev.kvcache.s3.testkit.S3Store;
import dev.kvcache.testkit.Payloads;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * Object-tier quotas per namespace ({@link S3TierConfig.Builder#quota}) against a real S3 server on
 * loopback: a namespace that floods the bucket at ten times its quota has only its own objects
 * deleted, and the bucket keeps every object of the namespace beside it, byte for byte.
 */
class S3QuotaTest {

  private static final int BLOCK = 32 << 10;
  private static final Namespace FLOOD = Namespace.of("m", "bf16", "tp0of1", "flood");
  private static final Namespace KEPT = Namespace.of("m", "bf16", "tp0of1", "kept");
  @RegisterExtension static final S3Store store = new S3Store();

  private static List<BlockKey> keys(Namespace ns, int n) {
    return IntStream.range(0, n)
        .mapToObj(i -> BlockKey.ofRaw(ns, ByteBuffer.allocate(16).putInt(12, i).array())).toList();
  }

  /** The block objects of {@code ns}'s folder in the bucket under {@code prefix}. */
  private static List<String> objects(String prefix, Namespace ns) {
    String folder = prefix + ObjectNames.folder(ns).id() + "/";
    return store.bucket().listObjectsV2(b -> b.bucket(InProcessS3.BUCKET).prefix(folder)).join()
        .contents().stream().map(S3Object::key).filter(n -> !n.endsWith("namespace.json"))
        .toList();
  }

  @Test
  void aNamespaceFloodingTheBucketAtTenTimesItsQuotaDeletesOnlyItsOwnObjects() throws Exception {
    String prefix = "quota-flood/";
    try (S3Tier tier = S3Tier.open(store.server().config(20L * BLOCK, prefix).quota(FLOOD, 4L * BLOCK)
        .listInterval(Duration.ZERO).build())) {
      List<BlockKey> kept = keys(KEPT, 12);
      for (BlockKey key : kept) {
        assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
      }
      for (BlockKey key : keys(FLOOD, 40)) {
        assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
      }
      assertThat(tier.awaitDeletes(10_000)).isTrue();
      assertThat(objects(prefix, KEPT)).as("the kept namespace's objects").hasSize(12);
      assertThat(objects(prefix, FLOOD)).as("the flood's objects, within its quota").hasSize(4);
      ByteBuffer dst = ByteBuffer.allocate(BLOCK);
      for (BlockKey key : kept) {
        assertThat(tier.getInto(key, dst.clear())).isEqualTo(GetStatus.HIT);
        assertThat(Payloads.verify(key, dst.flip())).isEqualTo(1);
      }
    }
  }

  @Test
  void quotasThatLeaveNothingToTheOthersAreRefused() {
    assertThatThrownBy(() -> store.server().config(8L * BLOCK).quota(FLOOD, 4L * BLOCK)
        .quota(KEPT, 4L * BLOCK).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("quotas take " + 8L * BLOCK)
        .hasMessageContaining("must leave some to the namespaces without a quota");
    assertThatThrownBy(() -> store.server().config(8L * BLOCK).quota(FLOOD, 0))
        .hasMessageContaining("must be positive");
  }
}
