package dev.kvcache.s3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.Namespace;
import dev.kvcache.PrefixKeys;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.s3.internal.ObjectNames;
import dev.kvcache.s3.testkit.InProcessS3;
import dev.kvcache.s3.testkit.S3Store;
import dev.kvcache.s3.testkit.RcloneS3;
import dev.kvcache.spi.BlockListener;
import dev.kvcache.testkit.Payloads;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.core.async.AsyncResponseTransformer;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.S3Object;

/** What the object tier promises beyond the tier contract, against a real S3 server on loopback. */
@Tag("integration")
class S3TierTest {

  private static final int BLOCK = 64 << 10;
  private static final Namespace LLAMA = Namespace.of("llama-3.1-8b", "bf16", "tp0of1", "team-a");
  @RegisterExtension static final S3Store store = new S3Store();

  private S3Tier first;
  private S3Tier second;

  @AfterEach
  void closeTiers() {
    for (S3Tier t : new S3Tier[] {first, second}) {
      if (t != null) {
        t.close();
      }
    }
  }

  private static List<BlockKey> prompt(int blocks, int seed) {
    int[] tokens = IntStream.range(0, blocks * 16).map(i -> seed * 100_000 + i).toArray();
    return PrefixKeys.of(LLAMA, 16).keysFor(tokens);
  }

  private static List<String> names(String prefix) {
    return store.bucket().listObjectsV2(b -> b.bucket(InProcessS3.BUCKET).prefix(prefix)).join()
        .contents().stream().map(S3Object::key).sorted().toList();
  }

  /** The name of the object in the bucket that holds the key's block. */
  private static String objectName(String prefix, BlockKey key) {
    return names(prefix).stream().filter(n -> n.endsWith(key.toHex())).findFirst().orElseThrow();
  }

  @Test
  void objectsAreNamedByNamespaceAndKeyAndTheFolderDescribesItsNamespace() throws Exception {
    S3TierConfig config = store.server().config(64L << 20).build();
    first = S3Tier.open(config);
    BlockKey key = prompt(1, 1).get(0);
    assertThat(first.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);

    List<String> names = names(config.prefix());
    assertThat(names).hasSize(2);
    String blockName = names.stream().filter(n -> n.endsWith(key.toHex())).findFirst().orElseThrow();
    String folder = blockName.substring(0, blockName.length() - key.toHex().length());
    assertThat(folder).matches(java.util.regex.Pattern.quote(config.prefix()) + "[0-9a-f]{16}/");
    assertThat(names).contains(folder + "namespace.json");

    String descriptor = new String(store.bucket().getObject(b -> b.bucket(InProcessS3.BUCKET)
        .key(folder + "namespace.json"),
        AsyncResponseTransformer.toBytes()).join().asByteArray(), StandardCharsets.UTF_8);
    assertThat(descriptor).contains("\"model\" : \"llama-3.1-8b\"", "\"dtype\" : \"bf16\"",
        "\"layout\" : \"tp0of1\"", "\"tenant\" : \"team-a\"", "kvcache-s3/1");

    GetObjectResponse head = store.bucket().getObject(b -> b.bucket(InProcessS3.BUCKET).key(blockName),
        AsyncResponseTransformer.toBytes()).join().response();
    assertThat(head.metadata()).containsKey("kvcache-crc32c");
  }

  @Test
  void anotherServerFindsTheBlocksByLookupAndAfterListing() throws Exception {
    S3TierConfig config = store.server().config(64L << 20).listInterval(Duration.ZERO)
        .lookupBudget(Duration.ofSeconds(5)).build(); // this test is about finding, not budgets
    first = S3Tier.open(config);
    List<BlockKey> keys = prompt(6, 2);
    for (int i = 0; i < 4; i++) {
      assertThat(first.put(keys.get(i), Payloads.of(keys.get(i), 3, BLOCK)))
          .isEqualTo(PutStatus.STORED);
    }

    second = S3Tier.open(config);
    assertThat(second.lookupPrefix(keys)).as("found by asking the store").isEqualTo(4);
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    assertThat(second.getInto(keys.get(3), dst)).isEqualTo(GetStatus.HIT);
    assertThat(Payloads.verify(keys.get(3), dst.flip())).isEqualTo(3);
    second.close();

    second = S3Tier.open(config.toBuilder().lookupBudget(Duration.ZERO).build());
    assertThat(second.listNow()).isTrue();
    assertThat(second.stats().blocks()).isEqualTo(4);
    assertThat(second.stats().bytesUsed()).isEqualTo(4L * BLOCK);
    assertThat(second.lookupPrefix(keys)).as("known from the listing, without asking")
        .isEqualTo(4);
    assertThat(second.s3Stats().requests().get("HEAD")).isZero();
  }

  @Test
  void aPinDownloadsNothingUntilReadAndADamagedOrDeletedBlockReadsAsAMiss() throws Exception {
    S3TierConfig config = store.server().config(64L << 20).listInterval(Duration.ZERO)
        .lookupBudget(Duration.ofSeconds(5)).build();
    first = S3Tier.open(config);
    List<BlockKey> keys = prompt(5, 7);
    for (int i = 0; i < 4; i++) {
      first.put(keys.get(i), Payloads.of(keys.get(i), 6, BLOCK));
    }
    second = S3Tier.open(config); // knows nothing yet: finds the blocks by HEAD
    try (PrefixPin pin = second.pinPrefix(keys, Duration.ofSeconds(30))) {
      assertThat(pin.blocks()).isEqualTo(4);
      assertThat(pin.length(3)).isEqualTo(BLOCK);
      assertThat(second.s3Stats().bytesDownloaded()).as("pinning downloads nothing").isZero();

      ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
      assertThat(pin.getInto(1, dst)).isEqualTo(GetStatus.HIT);
      assertThat(Payloads.verify(keys.get(1), dst.flip())).isEqualTo(6);
      assertThat(second.s3Stats().bytesDownloaded()).isEqualTo(BLOCK);

      String damagedName = objectName(config.prefix(), keys.get(2));
      GetObjectResponse stored = store.bucket().getObject(
          b -> b.bucket(InProcessS3.BUCKET).key(damagedName),
          AsyncResponseTransformer.toBytes()).join().response();
      ByteBuffer damaged = Payloads.of(keys.get(2), 6, BLOCK);
      damaged.put(77, (byte) (damaged.get(77) ^ 0x01));
      store.bucket().putObject(b -> b.bucket(InProcessS3.BUCKET).key(damagedName)
          .metadata(stored.metadata()), AsyncRequestBody.fromByteBuffer(damaged)).join();
      assertThat(pin.getInto(2, dst.clear())).as("damaged since it was pinned")
          .isEqualTo(GetStatus.MISS);
      assertThat(dst.position()).isZero();
      assertThat(pin.read(2, view -> { throw new AssertionError("handed damaged bytes"); }))
          .isFalse();
      assertThat(second.s3Stats().damagedBlocks()).isEqualTo(1);

      String gone = objectName(config.prefix(), keys.get(3));
      store.bucket().deleteObject(b -> b.bucket(InProcessS3.BUCKET).key(gone)).join();
      assertThat(pin.getInto(3, dst.clear())).as("deleted since it was pinned")
          .isEqualTo(GetStatus.MISS);
      long[] seen = new long[1];
      assertThat(pin.read(0, view -> seen[0] = Payloads.verify(keys.get(0), view))).isTrue();
      assertThat(seen[0]).isEqualTo(6);
    }
    assertThat(second.stats().hits()).as("each pinned block counts once, as the pin was made")
        .isEqualTo(4);
  }

  @Test
  void aDamagedObjectIsAMissIsCountedAndIsDeleted() throws Exception {
    S3TierConfig config = store.server().config(64L << 20).build();
    first = S3Tier.open(config);
    BlockKey key = prompt(1, 3).get(0);
    first.put(key, Payloads.of(key, 5, BLOCK));
    String name = objectName(config.prefix(), key);
    // the same length and metadata, one byte changed: as a disk's bit rot would leave it
    GetObjectResponse stored = store.bucket().getObject(b -> b.bucket(InProcessS3.BUCKET).key(name),
        AsyncResponseTransformer.toBytes()).join().response();
    ByteBuffer damaged = Payloads.of(key, 5, BLOCK);
    damaged.put(1000, (byte) (damaged.get(1000) ^ 0x10));
    store.bucket().putObject(b -> b.bucket(InProcessS3.BUCKET).key(name).metadata(stored.metadata()),
        AsyncRequestBody.fromByteBuffer(damaged)).join();

    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    assertThat(first.getInto(key, dst)).isEqualTo(GetStatus.MISS);
    assertThat(dst.position()).as("nothing handed over").isZero();
    try (BlockLease lease = first.get(key)) {
      assertThat(lease.status()).isEqualTo(GetStatus.MISS);
    }
    assertThat(first.getAll(List.of(key)).get(0).status()).isEqualTo(GetStatus.MISS);
    assertThat(first.s3Stats().damagedBlocks()).isEqualTo(1);
    assertThat(first.contains(key)).isFalse();
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (names(config.prefix()).contains(name) && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertThat(names(config.prefix())).as("the damaged copy is deleted").doesNotContain(name);
  }

  @Test
  void aBlockDamagedAtRestInAnotherStoreIsAMissToo() throws Exception {
    try (RcloneS3 rclone = new RcloneS3()) {
      S3TierConfig config = rclone.config(64L << 20).build();
      first = S3Tier.open(config);
      BlockKey key = prompt(1, 7).get(0);
      first.put(key, Payloads.of(key, 5, BLOCK));
      String name = config.prefix() + ObjectNames.folder(key).id() + "/" + key.toHex();
      Path file = rclone.file(name);
      byte[] bytes = Files.readAllBytes(file);
      bytes[BLOCK / 2] ^= 0x01; // one bit flipped on the store's disk
      Files.write(file, bytes);

      assertThat(first.getInto(key, ByteBuffer.allocateDirect(BLOCK))).isEqualTo(GetStatus.MISS);
      assertThat(first.s3Stats().damagedBlocks()).isEqualTo(1);
      first.close();
      first = null;
    }
  }

  @Test
  void anObjectWithoutAChecksumIsNeverServed() throws Exception {
    S3TierConfig config = store.server().config(64L << 20).build();
    first = S3Tier.open(config);
    BlockKey key = prompt(1, 4).get(0);
    first.put(key, Payloads.of(key, 5, BLOCK));
    String name = objectName(config.prefix(), key);
    store.bucket().putObject(b -> b.bucket(InProcessS3.BUCKET).key(name),
        AsyncRequestBody.fromByteBuffer(Payloads.of(key, 5, BLOCK))).join();

    assertThat(first.getInto(key, ByteBuffer.allocateDirect(BLOCK))).isEqualTo(GetStatus.MISS);
    assertThat(first.s3Stats().damagedBlocks()).isEqualTo(1);
  }

  @Test
  void evictionKeepsTheBucketWithinCapacityByRecencyAboveAndHereWithBulkDeletes() throws Exception {
    S3TierConfig config = store.server().config(8L * BLOCK).build();
    first = S3Tier.open(config);
    List<BlockKey> keys = prompt(9, 5);
    for (int i = 0; i < 8; i++) {
      first.put(keys.get(i), Payloads.of(keys.get(i), 1, BLOCK));
    }
    assertThat(first.getInto(keys.get(0), ByteBuffer.allocateDirect(BLOCK)))
        .isEqualTo(GetStatus.HIT); // key 0 is now the most recently used
    first.usedAbove(keys.get(1)); // read from a copy above: key 1 is used too
    // a block four times as large: the four least recently used go, in one request
    first.put(keys.get(8), Payloads.of(keys.get(8), 1, 4 * BLOCK));
    assertThat(first.awaitDeletes(5_000)).isTrue();

    assertThat(first.stats().bytesUsed()).isEqualTo(8L * BLOCK);
    assertThat(first.stats().evictions()).isEqualTo(4);
    List<String> left = names(config.prefix());
    assertThat(left.stream().filter(n -> !n.endsWith("namespace.json"))).hasSize(5);
    for (int i : new int[] {2, 3, 4, 5}) {
      assertThat(left).noneMatch(n -> n.endsWith(keys.get(i).toHex()));
    }
    assertThat(left).anyMatch(n -> n.endsWith(keys.get(0).toHex()));
    assertThat(left).anyMatch(n -> n.endsWith(keys.get(1).toHex()));
    assertThat(left).anyMatch(n -> n.endsWith(keys.get(8).toHex()));
    assertThat(first.s3Stats().requests().get("DELETE")).as("in bulk").isEqualTo(1);
    assertThat(first.s3Stats().objectsDeleted()).isEqualTo(4);
  }

  /**
   * The tier tells its listener of the blocks it uploads and of those it lets go of: deleted,
   * evicted to keep its capacity, found damaged by a read, and dropped with their namespace (with
   * those of other servers it knows); never of another server's uploads, which that server tells.
   */
  @Test
  void aListenerHearsWhatThisServerStoresAndDrops() throws Exception {
    S3TierConfig config = store.server().config(4 * BLOCK + 1024).listInterval(Duration.ZERO).build();
    first = S3Tier.open(config);
    second = S3Tier.open(config);
    Map<BlockKey, Integer> held = new ConcurrentHashMap<>(); // key -> stores minus removals
    List<String> heard = new java.util.concurrent.CopyOnWriteArrayList<>();
    assertThat(first.listen(new BlockListener() {
      @Override
      public void stored(String tier, BlockKey key) {
        heard.add("stored " + tier);
        held.merge(key, 1, Integer::sum);
      }

      @Override
      public void removed(String tier, BlockKey key) {
        heard.add("removed " + tier);
        held.merge(key, -1, Integer::sum);
      }
    })).isTrue();
    List<BlockKey> keys = prompt(6, 9);
    for (BlockKey key : keys) { // six blocks into room for four: the oldest are evicted
      assertThat(first.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
    }
    BlockKey theirs = prompt(1, 10).get(0);
    second.put(theirs, Payloads.of(theirs, 1, BLOCK));
    assertThat(first.listNow()).isTrue(); // learns of the other server's block: not told
    assertThat(heard).allMatch(e -> e.endsWith(" s3"));
    assertThat(held.getOrDefault(theirs, 0)).isZero();
    for (BlockKey key : keys) {
      assertThat(held.getOrDefault(key, 0)).as("told of " + key)
          .isEqualTo(first.contains(key) ? 1 : 0);
    }
    assertThat(held.values().stream().filter(n -> n == 1)).hasSizeBetween(1, 4);

    BlockKey deleted = keys.stream().filter(first::contains).findFirst().orElseThrow();
    assertThat(first.delete(deleted)).isTrue();
    assertThat(held.get(deleted)).isZero();

    BlockKey damaged = keys.stream().filter(first::contains).findFirst().orElseThrow();
    store.bucket().putObject(b -> b.bucket(InProcessS3.BUCKET).key(objectName(config.prefix(), damaged)),
        AsyncRequestBody.fromBytes(new byte[BLOCK])).join(); // no checksum of the tier's
    assertThat(first.getInto(damaged, ByteBuffer.allocateDirect(BLOCK)))
        .isEqualTo(GetStatus.MISS);
    assertThat(held.get(damaged)).isZero();

    first.dropNamespace(LLAMA); // a drop tells of every block of the namespace it knows, whoever
    for (BlockKey key : keys) { // stored it: the other server's block is gone from the bucket too
      assertThat(held.getOrDefault(key, 0)).isZero();
    }
    assertThat(held.get(theirs)).isEqualTo(-1);
  }

  @Test
  void aNamespaceIsDroppedWholeWhicheverServerWroteItsBlocks() throws Exception {
    S3TierConfig config = store.server().config(64L << 20).listInterval(Duration.ZERO).build();
    first = S3Tier.open(config);
    second = S3Tier.open(config);
    Namespace other = Namespace.of("qwen-2.5-7b", "bf16", "tp0of1", "team-a");
    List<BlockKey> dropped = prompt(4, 8);
    List<BlockKey> kept = PrefixKeys.of(other, 16).keysFor(IntStream.range(0, 64).toArray());
    for (int i = 0; i < 4; i++) {
      S3Tier through = i % 2 == 0 ? first : second;
      through.put(dropped.get(i), Payloads.of(dropped.get(i), 1, BLOCK));
      through.put(kept.get(i), Payloads.of(kept.get(i), 1, BLOCK));
    }
    String folder = config.prefix() + ObjectNames.folder(LLAMA).id() + "/";
    assertThat(names(folder)).hasSize(5); // four blocks and the descriptor

    assertThat(first.dropNamespace(LLAMA)).isEqualTo(4);
    assertThat(first.awaitDeletes(10_000)).isTrue();
    assertThat(names(folder)).as("the folder, descriptor and all").isEmpty();
    assertThat(names(config.prefix() + ObjectNames.folder(other).id() + "/")).hasSize(5);
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    assertThat(first.getInto(dropped.get(1), dst)).isEqualTo(GetStatus.MISS);
    assertThat(first.contains(dropped.get(0))).isFalse();
    assertThat(second.getInto(dropped.get(0), dst.clear())).as("known to the other server")
        .isEqualTo(GetStatus.MISS);
    assertThat(second.listNow()).isTrue();
    assertThat(second.contains(dropped.get(2))).isFalse();
    assertThat(second.getInto(kept.get(1), dst.clear())).isEqualTo(GetStatus.HIT);
    assertThat(Payloads.verify(kept.get(1), dst.flip())).isEqualTo(1);

    // the namespace can be used again: its folder is described anew
    first.put(dropped.get(0), Payloads.of(dropped.get(0), 2, BLOCK));
    assertThat(names(folder)).hasSize(2).anyMatch(n -> n.endsWith(ObjectNames.DESCRIPTOR));
  }

  @Test
  void aStoreThatStopsAnsweringGivesMissesAndNotStoredThenRecovers() throws Exception {
    S3TierConfig config = store.server().config(64L << 20).requestTimeout(Duration.ofSeconds(2)).build();
    first = S3Tier.open(config);
    List<BlockKey> keys = prompt(3, 6);
    first.put(keys.get(0), Payloads.of(keys.get(0), 1, BLOCK));
    store.server().stop();
    try {
      ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
      assertThat(first.getInto(keys.get(0), dst)).isEqualTo(GetStatus.MISS);
      assertThat(first.put(keys.get(1), Payloads.of(keys.get(1), 1, BLOCK)))
          .isEqualTo(PutStatus.NOT_ADMITTED);
      assertThat(first.health().degraded()).as("two failures: not yet a pause").isFalse();
      assertThat(first.getInto(keys.get(0), dst.clear())).isEqualTo(GetStatus.MISS);
      assertThat(first.health().degraded()).as("three in a row: backing off").isTrue();
      assertThat(first.health().problems().get(0)).contains("object store");
      assertThat(first.s3Stats().notStored()).isEqualTo(1);
    } finally {
      store.server().restart();
    }
    long deadline = System.nanoTime() + 60_000_000_000L;
    PutStatus status = PutStatus.NOT_ADMITTED;
    while (status != PutStatus.STORED && System.nanoTime() < deadline) {
      Thread.sleep(100);
      status = first.put(keys.get(2), Payloads.of(keys.get(2), 1, BLOCK));
    }
    assertThat(status).as("stored once the store answers again").isEqualTo(PutStatus.STORED);
    assertThat(first.health().degraded()).isFalse();
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    assertThat(first.getInto(keys.get(0), dst)).isEqualTo(GetStatus.HIT);
    assertThat(Payloads.verify(keys.get(0), dst.flip())).isEqualTo(1);
  }

  @Test
  void settingsAreCheckedWithClearErrors() {
    assertThatThrownBy(() -> S3TierConfig.builder("Not_A_Bucket", 1 << 20))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("bucket name");
    assertThatThrownBy(() -> S3TierConfig.builder("kv", 0))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> S3TierConfig.builder("kvcache", 1 << 20)
        .endpoint(java.net.URI.create("ftp://host/")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("http");
    assertThatThrownBy(() -> S3TierConfig.builder("kvcache", 1 << 20).maxBlockBytes(2 << 20)
        .build()).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("capacity");
    assertThat(S3TierConfig.builder("kvcache", 1 << 20).prefix("fleet").build().prefix())
        .isEqualTo("fleet/");
    assertThat(S3TierConfig.builder("kvcache", 1 << 20).build().pathStyle()).isFalse();
    assertThat(S3TierConfig.builder("kvcache", 1 << 20)
        .endpoint(java.net.URI.create("http://127.0.0.1:9000")).build().pathStyle()).isTrue();
  }

  @Test
  void aPlainHttpEndpointOnAnotherHostMustBeAllowed() throws Exception {
    java.net.URI plain = java.net.URI.create("http://rgw.internal:7480");
    assertThatThrownBy(() -> S3TierConfig.builder("kvcache", 1 << 20).endpoint(plain).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("plain HTTP")
        .hasMessageContaining("attacker");
    assertThat(S3TierConfig.builder("kvcache", 1 << 20).endpoint(plain).allowPlainHttp(true)
        .build().endpoint()).contains(plain);
    for (String loopback : List.of("http://localhost:9000", "http://127.0.0.2:9000",
        "http://[::1]:9000")) {
      assertThat(S3TierConfig.builder("kvcache", 1 << 20).endpoint(java.net.URI.create(loopback))
          .build().allowPlainHttp()).as(loopback).isFalse();
    }
    assertThat(S3TierConfig.builder("kvcache", 1 << 20)
        .endpoint(java.net.URI.create("https://rgw.internal:7480")).build().endpoint())
        .isPresent();
    java.util.Map<String, String> settings = new java.util.TreeMap<>(java.util.Map.of(
        "bucket", "kvcache", "capacity", "1MiB", "endpoint", plain.toString()));
    assertThatThrownBy(() -> new S3TierFactory().open(
        dev.kvcache.spi.TierSettings.of(settings, "kvcache.cache.s3."), 1 << 20))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'kvcache.cache.s3.endpoint'")
        .hasMessageContaining("'kvcache.cache.s3.allow-plain-http'");
  }
}
