package dev.kvcache.s3;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.Namespace;
import dev.kvcache.PrefixKeys;
import dev.kvcache.PutStatus;
import dev.kvcache.s3.internal.Download;
import dev.kvcache.s3.internal.ObjectNames;
import dev.kvcache.s3.internal.ObjectTags;
import dev.kvcache.s3.testkit.InProcessS3;
import dev.kvcache.s3.testkit.S3Store;
import dev.kvcache.testkit.Payloads;
import dev.kvcache.testkit.RecordingTags;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.core.async.AsyncResponseTransformer;

/**
 * Tags ({@link dev.kvcache.spi.BlockTags}) kept with the objects: the tag a tier's listener gives a block goes
 * into its object's metadata, and a tier that reads the object (another server, or this one
 * restarted) tells it; a tag that fails its checksum is not told, and its block is served.
 */
@Tag("integration")
class S3TagsTest {

  private static final int BLOCK = 64 << 10;
  private static final Namespace NS = Namespace.of("tags-test", "bf16", "tp0of1");
  @RegisterExtension static final S3Store store = new S3Store();

  private final List<S3Tier> tiers = new ArrayList<>();

  @AfterEach
  void closeTiers() {
    tiers.forEach(S3Tier::close);
  }

  private S3Tier open(String prefix, RecordingTags tags) throws java.io.IOException {
    S3Tier tier = S3Tier.open(store.server().config(64L << 20, prefix).build());
    tiers.add(tier);
    tier.listen(tags);
    return tier;
  }

  private static List<BlockKey> keys(int n, int seed) {
    return PrefixKeys.of(NS, 4).keysFor(IntStream.range(0, 4 * n).map(i -> seed * 1000 + i)
        .toArray());
  }

  private static GetStatus read(S3Tier tier, BlockKey key) {
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    GetStatus status = tier.getInto(key, dst);
    if (status == GetStatus.HIT) {
      assertThat(Payloads.verify(key, dst.flip())).isEqualTo(1);
    }
    return status;
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void aTagGoesWithItsObjectAndIsToldByTheTierThatReadsIt() throws Exception {
    List<BlockKey> keys = keys(3, 1);
    RecordingTags writer = new RecordingTags();
    writer.give(keys.get(0), "engine block 0");
    writer.give(keys.get(1), new byte[ObjectTags.MAX_BYTES + 1]); // too long for metadata
    S3Tier first = open("tags-a/", writer);
    for (BlockKey key : keys) {
      assertThat(first.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
    }
    assertThat(writer.told()).as("the writing tier tells nothing back").isEmpty();

    RecordingTags reader = new RecordingTags();
    S3Tier second = open("tags-a/", reader); // another server on the same bucket
    for (BlockKey key : keys) {
      assertThat(read(second, key)).isEqualTo(GetStatus.HIT);
    }
    assertThat(reader.told()).containsExactly("s3 " + keys.get(0).toHex() + " engine block 0");
    assertThat(read(second, keys.get(0))).isEqualTo(GetStatus.HIT);
    assertThat(reader.told()).as("told as each read finds it").hasSize(2);
  }

  @Test
  void aTagThatFailsItsChecksumIsNotToldAndItsBlockIsServed() throws Exception {
    List<BlockKey> keys = keys(2, 2);
    RecordingTags tags = new RecordingTags();
    S3Tier tier = open("tags-b/", tags);
    ObjectNames names = new ObjectNames("tags-b/");
    for (BlockKey key : keys) {
      ByteBuffer block = Payloads.of(key, 1, BLOCK);
      int crc = dev.kvcache.spi.Crc32c.of(block.duplicate());
      // the first object's tag was kept for another block; the second's is whole
      String tag = ObjectTags.encode(key == keys.get(0) ? keys.get(1) : key, utf8("mine"));
      store.bucket().putObject(b -> b.bucket(InProcessS3.BUCKET)
              .key(names.block(ObjectNames.folder(key), key))
              .metadata(Map.of(Download.CRC_METADATA, String.format("%08x", crc),
                  ObjectTags.METADATA, tag)),
          AsyncRequestBody.fromByteBuffer(block)).join();
    }
    assertThat(read(tier, keys.get(0))).isEqualTo(GetStatus.HIT);
    assertThat(read(tier, keys.get(1))).isEqualTo(GetStatus.HIT);
    assertThat(tags.told()).containsExactly("s3 " + keys.get(1).toHex() + " mine");

    // the metadata as the store keeps it
    assertThat(store.bucket().getObject(b -> b.bucket(InProcessS3.BUCKET)
            .key(names.block(ObjectNames.folder(keys.get(1)), keys.get(1))),
        AsyncResponseTransformer.toBytes()).join().response().metadata())
        .containsKey(ObjectTags.METADATA);
  }
}
