package dev.kvcache.s3;

import static dev.kvcache.testkit.TestBytes.indexOf;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.Namespace;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.s3.internal.ObjectNames;
import dev.kvcache.s3.testkit.InProcessS3;
import dev.kvcache.s3.testkit.S3Store;
import dev.kvcache.seal.MasterKeys;
import dev.kvcache.spi.Crc32c;
import dev.kvcache.spi.NamespaceRemoval;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierSettings;
import dev.kvcache.testkit.Payloads;
import dev.kvcache.tiered.KvCacheBuilder;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.function.IntPredicate;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.core.async.AsyncResponseTransformer;
import software.amazon.awssdk.core.ResponseBytes;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * Sealed namespaces in the object tier ({@link S3TierConfig.Builder#sealing}) against a real S3
 * server on loopback: no object of the bucket holds their blocks' bytes, every read path and
 * another server sharing the bucket read them back, a shredded namespace's objects never open
 * again (on the server that shredded it at once, on the others once they read its salt again),
 * an object changed in the bucket (its checksum made to match) or stripped of its seal is a miss,
 * never other bytes, and a new master key seals new blocks while the old one opens what it sealed.
 */
class S3SealTest {

  private static final int BLOCK = 64 << 10;
  private static final Namespace SEALED = Namespace.of("m", "bf16", "tp0of1", "sealed");
  private static final Namespace PLAIN = Namespace.of("m", "bf16", "tp0of1", "plain");
  @RegisterExtension static final S3Store store = new S3Store();
  @TempDir Path temp;

  private static String masterKey(int id, int seed) {
    byte[] k = new byte[32];
    new Random(seed).nextBytes(k);
    return id + ":" + Base64.getEncoder().encodeToString(k);
  }

  private static List<BlockKey> keys(Namespace ns, int from, int to) {
    return IntStream.range(from, to)
        .mapToObj(i -> BlockKey.ofRaw(ns, ByteBuffer.allocate(16).putInt(12, i).array())).toList();
  }

  private static S3Tier open(String prefix, String keys) throws Exception {
    return open(prefix, keys, Duration.ofMinutes(1));
  }

  private static S3Tier open(String prefix, String keys, Duration saltRecheck) throws Exception {
    return S3Tier.open(store.server().config(64L * BLOCK, prefix).listInterval(Duration.ZERO)
        .sealing(MasterKeys.parse(keys), List.of(SEALED)).build(), saltRecheck);
  }

  private static void putAll(S3Tier tier, List<BlockKey> keys) {
    for (BlockKey key : keys) {
      assertThat(tier.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
    }
  }

  private static void assertReads(S3Tier tier, List<BlockKey> keys) {
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    for (BlockKey key : keys) {
      assertThat(tier.getInto(key, dst.clear())).as("getInto " + key).isEqualTo(GetStatus.HIT);
      assertThat(Payloads.verify(key, dst.flip())).isEqualTo(1);
      try (BlockLease lease = tier.get(key)) {
        assertThat(lease.status()).as("get " + key).isEqualTo(GetStatus.HIT);
        assertThat(Payloads.verify(key, lease.bytes())).isEqualTo(1);
      }
    }
  }

  private static void assertMisses(S3Tier tier, List<BlockKey> keys) {
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    for (BlockKey key : keys) {
      assertThat(tier.getInto(key, dst.clear())).as("getInto " + key).isEqualTo(GetStatus.MISS);
      assertThat(dst.position()).isZero();
      try (BlockLease lease = tier.get(key)) {
        assertThat(lease.status()).as("get " + key).isEqualTo(GetStatus.MISS);
      }
    }
  }

  private static String objectName(String prefix, BlockKey key) {
    return new ObjectNames(prefix).block(ObjectNames.folder(key), key);
  }

  private static ResponseBytes<GetObjectResponse> object(String name) {
    return store.bucket().getObject(b -> b.bucket(InProcessS3.BUCKET).key(name),
        AsyncResponseTransformer.toBytes()).join();
  }

  /** Writes {@code body} over an object, its CRC32C made to match, with {@code metadata}. */
  private static void replace(String name, byte[] body, Map<String, String> metadata) {
    Map<String, String> m = new HashMap<>(metadata);
    m.put("kvcache-crc32c", String.format("%08x", Crc32c.of(ByteBuffer.wrap(body))));
    store.bucket().putObject(b -> b.bucket(InProcessS3.BUCKET).key(name).metadata(m),
        AsyncRequestBody.fromBytes(body)).join();
  }

  private static List<String> folder(String prefix, Namespace ns) {
    return store.bucket().listObjectsV2(b -> b.bucket(InProcessS3.BUCKET)
            .prefix(prefix + ObjectNames.folder(ns).id() + "/")).join()
        .contents().stream().map(S3Object::key).toList();
  }

  @Test
  void sealedObjectsHoldNoneOfTheirBytesAndReadBackOnEveryPathAndAnotherServer()
      throws Exception {
    String prefix = "seal-read/";
    List<BlockKey> sealed = keys(SEALED, 0, 6);
    List<BlockKey> plain = keys(PLAIN, 0, 6);
    try (S3Tier tier = open(prefix, masterKey(1, 1))) {
      putAll(tier, sealed);
      putAll(tier, plain);
      assertReads(tier, sealed);
      List<BlockLease> all = tier.getAll(sealed);
      for (int i = 0; i < sealed.size(); i++) {
        assertThat(Payloads.verify(sealed.get(i), all.get(i).bytes())).isEqualTo(1);
        all.get(i).close();
      }
      try (PrefixPin pin = tier.pinPrefix(sealed, Duration.ofSeconds(10))) {
        assertThat(pin.blocks()).isEqualTo(sealed.size());
        assertThat(pin.length(2)).as("the block's length, not its object's").isEqualTo(BLOCK);
        ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
        assertThat(pin.getInto(2, dst)).isEqualTo(GetStatus.HIT);
        assertThat(Payloads.verify(sealed.get(2), dst.flip())).isEqualTo(1);
      }
    }
    for (int i = 0; i < sealed.size(); i++) {
      byte[] block = new byte[BLOCK];
      Payloads.of(sealed.get(i), 1, BLOCK).get(block);
      byte[] stretch = java.util.Arrays.copyOfRange(block, BLOCK / 2, BLOCK / 2 + 256);
      ResponseBytes<GetObjectResponse> o = object(objectName(prefix, sealed.get(i)));
      assertThat(indexOf(o.asByteArray(), stretch)).as("sealed object " + i).isNegative();
      assertThat(o.asByteArray()).hasSize(BLOCK + 29);
      assertThat(o.response().metadata()).containsEntry("kvcache-sealed", "aes-256-gcm");
      // the search finds a block that is there
      byte[] plainBlock = new byte[BLOCK];
      Payloads.of(plain.get(i), 1, BLOCK).get(plainBlock);
      assertThat(indexOf(object(objectName(prefix, plain.get(i))).asByteArray(),
          java.util.Arrays.copyOfRange(plainBlock, BLOCK / 2, BLOCK / 2 + 256)))
          .as("plain object " + i).isNotNegative();
    }
    assertThat(folder(prefix, SEALED)).contains(prefix + ObjectNames.folder(SEALED).id()
        + "/" + ObjectSeals.SALT);

    try (S3Tier other = open(prefix, masterKey(1, 1))) { // another server of the fleet
      assertReads(other, sealed);
      assertReads(other, plain);
      assertThat(other.sealFailures()).isZero();
    }
  }

  @Test
  void aShreddedNamespaceNeverOpensAgainBeforeAnyDeleteAndOnTheOtherServersOnceTheyRecheck()
      throws Exception {
    String prefix = "seal-shred/";
    List<BlockKey> sealed = keys(SEALED, 0, 6);
    try (S3Tier tier = open(prefix, masterKey(1, 1));
        S3Tier other = open(prefix, masterKey(1, 1), Duration.ofMillis(200))) {
      putAll(tier, sealed);
      assertReads(other, sealed); // holds the salt
      int objects = folder(prefix, SEALED).size();

      assertThat(tier.shred(SEALED)).isTrue();
      assertThat(folder(prefix, SEALED)).as("every block object is still there")
          .hasSize(objects - 1);
      assertMisses(tier, sealed);
      assertThat(tier.sealFailures()).isEqualTo(2L * sealed.size());
      Thread.sleep(300);
      assertMisses(other, sealed);
      try (S3Tier later = open(prefix, masterKey(1, 1))) {
        assertMisses(later, sealed);
      }
      assertThat(tier.shred(SEALED)).as("no salt left").isFalse();
      assertThat(tier.shred(PLAIN)).as("not sealed").isFalse();

      // a new salt for the namespace's new blocks
      List<BlockKey> fresh = keys(SEALED, 10, 12);
      putAll(tier, fresh);
      assertReads(tier, fresh);
    }
  }

  @Test
  void aRemovedNamespaceIsGoneFromEveryTierItsSaltFirstAndTheBucketKeepsNoneOfIt()
      throws Exception {
    String prefix = "seal-remove/";
    Map<String, String> stack = store.server().stackSettings(temp.resolve("disk"),
        store.server().endpoint(), prefix);
    Map<String, Map<String, String>> tiers = Map.of("disk", new HashMap<>(), "s3", new HashMap<>());
    stack.forEach((k, v) -> tiers.forEach((kind, m) -> {
      if (k.startsWith(kind + ".")) {
        m.put(k.substring(kind.length() + 1), v);
      }
    }));
    List<BlockKey> sealed = keys(SEALED, 0, 12);
    List<BlockKey> plain = keys(PLAIN, 0, 12);
    int block = 256 << 10;
    try (Tier cache = KvCacheBuilder.newBuilder().ramBytes(4L << 20).maxBlockBytes(1 << 20)
        .lower("disk", TierSettings.of(tiers.get("disk")))
        .lower("s3", TierSettings.of(tiers.get("s3")))
        .sealing(MasterKeys.parse(masterKey(1, 1)), List.of(SEALED)).build()) {
      for (BlockKey key : sealed) {
        assertThat(cache.put(key, Payloads.of(key, 1, block))).isEqualTo(PutStatus.STORED);
      }
      for (BlockKey key : plain) {
        assertThat(cache.put(key, Payloads.of(key, 1, block))).isEqualTo(PutStatus.STORED);
      }
      // blocks uploaded (an upload queue that is full drops some), the descriptor and the salt
      int uploaded = settled(prefix, SEALED) - 2;
      assertThat(uploaded).isPositive();
      int plainObjects = settled(prefix, PLAIN);

      Map<String, Long> removed = cache.capability(NamespaceRemoval.class).orElseThrow()
          .removeNamespace(SEALED);
      assertThat(removed.keySet()).containsExactly("ram", "disk", "s3");
      assertThat(removed.get("s3")).isEqualTo(uploaded);
      ByteBuffer dst = ByteBuffer.allocateDirect(block);
      for (BlockKey key : sealed) {
        assertThat(cache.getInto(key, dst.clear())).as("removed " + key).isEqualTo(GetStatus.MISS);
      }
      awaitFolder(prefix, SEALED, n -> n == 0);
      for (BlockKey key : plain) {
        assertThat(cache.getInto(key, dst.clear())).isEqualTo(GetStatus.HIT);
        assertThat(Payloads.verify(key, dst.flip())).isEqualTo(1);
      }
      assertThat(folder(prefix, PLAIN)).hasSize(plainObjects);
    }
  }

  /** The objects of {@code ns}'s folder once their number has not changed for a second. */
  private static int settled(String prefix, Namespace ns) throws InterruptedException {
    int n = -1;
    int now = folder(prefix, ns).size();
    for (int i = 0; i < 40 && now != n; i++) {
      n = now;
      Thread.sleep(1000);
      now = folder(prefix, ns).size();
    }
    return now;
  }

  /** Waits up to 20 s for the objects of {@code ns}'s folder to number as {@code wanted} says. */
  private static void awaitFolder(String prefix, Namespace ns, IntPredicate wanted)
      throws InterruptedException {
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (!wanted.test(folder(prefix, ns).size()) && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    List<String> objects = folder(prefix, ns);
    assertThat(objects.size()).as("objects in the folder of " + ns + ": " + objects)
        .matches(wanted::test);
  }

  @Test
  void anObjectChangedInTheBucketOrStrippedOfItsSealIsAMissNeverOtherBytes() throws Exception {
    String prefix = "seal-damage/";
    List<BlockKey> sealed = keys(SEALED, 0, 3);
    List<BlockKey> plain = keys(PLAIN, 0, 1);
    try (S3Tier tier = open(prefix, masterKey(1, 1))) {
      putAll(tier, sealed);
      putAll(tier, plain);
      String flipped = objectName(prefix, sealed.get(0));
      ResponseBytes<GetObjectResponse> o = object(flipped);
      byte[] body = o.asByteArray();
      body[BLOCK / 2] ^= 1;
      replace(flipped, body, o.response().metadata());

      String stripped = objectName(prefix, sealed.get(1));
      Map<String, String> meta = new HashMap<>(object(stripped).response().metadata());
      meta.remove("kvcache-sealed");
      replace(stripped, object(stripped).asByteArray(), meta);

      // the sealed bytes of one key moved under another key's name
      String moved = objectName(prefix, sealed.get(2));
      ResponseBytes<GetObjectResponse> first = object(objectName(prefix, sealed.get(0)));
      replace(moved, first.asByteArray(), first.response().metadata());

      // a plain namespace's object marked sealed: not opened as plain bytes
      String marked = objectName(prefix, plain.get(0));
      Map<String, String> sealedMeta = new HashMap<>(object(marked).response().metadata());
      sealedMeta.put("kvcache-sealed", "aes-256-gcm");
      replace(marked, object(marked).asByteArray(), sealedMeta);

      assertMisses(tier, sealed);
      assertMisses(tier, plain);
      assertThat(tier.sealFailures()).isPositive();
    }
  }

  @Test
  void aNewMasterKeySealsNewBlocksWhileTheOldOneOpensWhatItSealed() throws Exception {
    String prefix = "seal-rotate/";
    List<BlockKey> old = keys(SEALED, 0, 3);
    List<BlockKey> fresh = keys(SEALED, 3, 6);
    try (S3Tier tier = open(prefix, masterKey(1, 1))) {
      putAll(tier, old);
    }
    try (S3Tier tier = open(prefix, masterKey(1, 1) + "," + masterKey(2, 2))) {
      assertReads(tier, old);
      putAll(tier, fresh);
    }
    try (S3Tier tier = open(prefix, masterKey(2, 2))) {
      assertReads(tier, fresh);
      assertMisses(tier, old);
    }
    try (S3Tier tier = open(prefix, masterKey(1, 9))) { // a wrong key under the same id
      assertMisses(tier, old);
      assertThat(tier.sealFailures()).isEqualTo(2L * old.size());
    }
  }

  @Test
  void serversThatSealTheirFirstBlocksAtOnceAgreeOnOneSalt() throws Exception {
    String prefix = "seal-race/";
    List<BlockKey> a = keys(SEALED, 0, 4);
    List<BlockKey> b = keys(SEALED, 4, 8);
    try (S3Tier one = open(prefix, masterKey(1, 1));
        S3Tier two = open(prefix, masterKey(1, 1))) {
      CountDownLatch go = new CountDownLatch(1);
      CompletableFuture<Void> first = CompletableFuture.runAsync(() -> {
        await(go);
        putAll(one, a);
      });
      CompletableFuture<Void> second = CompletableFuture.runAsync(() -> {
        await(go);
        putAll(two, b);
      });
      go.countDown();
      first.join();
      second.join();
      assertReads(one, b);
      assertReads(two, a);
    }
    // what makes them agree: the store writes no second salt over the first
    String salt = prefix + ObjectNames.folder(SEALED).id() + "/" + ObjectSeals.SALT;
    assertThat(store.bucket().putObject(r -> r.bucket(InProcessS3.BUCKET).key(salt)
        .ifNoneMatch("*"), AsyncRequestBody.fromBytes(new byte[36])).handle((ok, e) -> e)
        .join()).hasRootCauseInstanceOf(S3Exception.class)
        .rootCause().extracting(e -> ((S3Exception) e).statusCode()).isEqualTo(412);
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
