package dev.kvcache.s3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.Namespace;
import dev.kvcache.PrefixKeys;
import dev.kvcache.PutStatus;
import dev.kvcache.s3.testkit.InProcessS3;
import dev.kvcache.s3.testkit.S3Store;
import dev.kvcache.spi.Rendezvous;
import dev.kvcache.spi.TierSettings;
import dev.kvcache.testkit.Payloads;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * A fleet's servers over one bucket, each evicting the objects it owns by rendezvous hashing,
 * against a real S3 server on loopback: the bucket stays within its capacity, each server deletes
 * only its own objects by its own recency, and when a server leaves, the others take its objects
 * over.
 */
class FleetEvictionTest {

  private static final int BLOCK = 32 << 10;
  private static final Namespace NS = Namespace.of("llama-3.1-8b", "bf16", "tp0of1", "fleet");
  private static final List<String> FLEET = List.of("10.0.0.1:7070", "10.0.0.2:7070",
      "10.0.0.3:7070");
  @RegisterExtension static final S3Store store = new S3Store();

  private final List<S3Tier> tiers = new ArrayList<>();

  @AfterEach
  void closeTiers() {
    tiers.forEach(S3Tier::close);
  }

  private S3Tier open(S3TierConfig.Builder config) throws Exception {
    S3Tier t = S3Tier.open(config.listInterval(Duration.ZERO).build());
    tiers.add(t);
    return t;
  }

  private static List<BlockKey> keys(int blocks, int seed) {
    int[] tokens = IntStream.range(0, blocks * 16).map(i -> seed * 1_000_000 + i).toArray();
    return PrefixKeys.of(NS, 16).keysFor(tokens);
  }

  /** The index in {@link #FLEET} of the server the clients send the key to. */
  private static int owner(BlockKey key, List<String> fleet) {
    return Rendezvous.pick(key, fleet.stream().map(Rendezvous::serverId).toList());
  }

  private static List<String> blockObjects(String prefix) {
    return store.bucket().listObjectsV2(b -> b.bucket(InProcessS3.BUCKET).prefix(prefix)).join()
        .contents().stream().map(S3Object::key).filter(n -> !n.endsWith("namespace.json"))
        .toList();
  }

  private static boolean stored(String prefix, BlockKey key) {
    return blockObjects(prefix).stream().anyMatch(n -> n.endsWith(key.toHex()));
  }

  @Test
  void eachServerEvictsOnlyTheObjectsItOwnsByItsOwnRecency() throws Exception {
    String prefix = "evict-own/";
    long capacity = 12L * BLOCK; // a share of 4 blocks each
    List<S3Tier> fleet = new ArrayList<>();
    for (String self : FLEET) {
      fleet.add(open(store.server().config(capacity, prefix).fleet(FLEET, self)));
    }
    // the clients send each key to its owner; every server gets 8 blocks of its own
    Map<Integer, List<BlockKey>> byOwner = new HashMap<>();
    for (BlockKey key : keys(60, 1)) {
      int o = owner(key, FLEET);
      List<BlockKey> own = byOwner.computeIfAbsent(o, x -> new ArrayList<>());
      if (own.size() < 8) {
        own.add(key);
      }
    }
    for (int round = 0; round < 8; round++) {
      for (int s = 0; s < 3; s++) {
        BlockKey key = byOwner.get(s).get(round);
        assertThat(fleet.get(s).put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
        if (round >= 1) { // the first block stays hot on every server
          fleet.get(s).usedAbove(byOwner.get(s).get(0));
        }
      }
    }
    for (S3Tier t : fleet) {
      assertThat(t.awaitDeletes(10_000)).isTrue();
    }
    assertThat(blockObjects(prefix)).as("the bucket within its capacity").hasSize(12);
    for (int s = 0; s < 3; s++) {
      S3Stats stats = fleet.get(s).s3Stats();
      assertThat(stats.fleetServers()).isEqualTo(3);
      assertThat(stats.ownedObjects()).isEqualTo(4);
      assertThat(stats.ownedBytes()).isEqualTo(4L * BLOCK);
      assertThat(stats.objectsDeleted()).isEqualTo(4);
      List<BlockKey> own = byOwner.get(s);
      assertThat(stored(prefix, own.get(0))).as("the block kept hot above").isTrue();
      for (int i = 5; i < 8; i++) {
        assertThat(stored(prefix, own.get(i))).as("recent block %d of server %d", i, s).isTrue();
      }
      for (int i = 1; i < 5; i++) {
        assertThat(stored(prefix, own.get(i))).as("cold block %d of server %d", i, s).isFalse();
      }
    }

    // a server stores a key it does not own (a client with an older list): it keeps it without
    // counting it, and the owner, once it lists the bucket, counts it and makes room
    BlockKey stray = byOwner.get(1).get(0); // hot on server 1, rewritten through server 0
    List<BlockKey> more = keys(60, 2).stream().filter(k -> owner(k, FLEET) == 1).toList();
    BlockKey strayNew = more.get(0);
    assertThat(fleet.get(0).put(strayNew, Payloads.of(strayNew, 1, BLOCK)))
        .isEqualTo(PutStatus.STORED);
    assertThat(fleet.get(0).s3Stats().ownedObjects()).isEqualTo(4);
    assertThat(fleet.get(0).contains(strayNew)).isTrue();
    assertThat(fleet.get(1).listNow()).isTrue();
    assertThat(fleet.get(1).awaitDeletes(10_000)).isTrue();
    assertThat(fleet.get(1).s3Stats().ownedObjects()).isEqualTo(4);
    assertThat(blockObjects(prefix)).hasSize(12);
    assertThat(stored(prefix, stray)).as("the owner's hot block survives").isTrue();
    ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
    assertThat(fleet.get(1).getInto(strayNew, dst)).isEqualTo(GetStatus.HIT);
    assertThat(Payloads.verify(strayNew, dst.flip())).isEqualTo(1);
  }

  @Test
  void whenAServerLeavesTheOthersTakeItsObjectsOverWithinTheirLargerShares() throws Exception {
    String prefix = "evict-leave/";
    long capacity = 12L * BLOCK;
    List<S3Tier> fleet = new ArrayList<>();
    for (String self : FLEET) {
      fleet.add(open(store.server().config(capacity, prefix).fleet(FLEET, self)));
    }
    List<BlockKey> all = keys(30, 3);
    for (BlockKey key : all) {
      fleet.get(owner(key, FLEET)).put(key, Payloads.of(key, 1, BLOCK));
    }
    for (S3Tier t : fleet) {
      assertThat(t.awaitDeletes(10_000)).isTrue();
    }
    assertThat(blockObjects(prefix)).hasSizeLessThanOrEqualTo(12);
    // the third server leaves; the two left restart with the fleet's new list
    List<String> two = FLEET.subList(0, 2);
    for (S3Tier t : fleet) {
      t.close();
    }
    tiers.clear();
    List<S3Tier> left = new ArrayList<>();
    for (String self : two) {
      S3Tier t = open(store.server().config(capacity, prefix).fleet(two, self));
      assertThat(t.listNow()).isTrue();
      left.add(t);
    }
    for (S3Tier t : left) {
      assertThat(t.awaitDeletes(10_000)).isTrue();
    }
    List<String> objects = blockObjects(prefix);
    long owned = 0;
    for (S3Tier t : left) {
      S3Stats stats = t.s3Stats();
      assertThat(stats.fleetServers()).isEqualTo(2);
      assertThat(stats.ownedBytes()).isLessThanOrEqualTo(6L * BLOCK);
      owned += stats.ownedObjects();
    }
    assertThat(owned).as("every object in the bucket has an owner among the servers left")
        .isEqualTo(objects.size());
    for (BlockKey key : all) {
      if (stored(prefix, key)) {
        S3Tier owner = left.get(owner(key, two));
        ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
        assertThat(owner.getInto(key, dst)).isEqualTo(GetStatus.HIT);
        assertThat(Payloads.verify(key, dst.flip())).isEqualTo(1);
      }
    }
  }

  @Test
  void fleetSettingsAreCheckedWithClearErrors() {
    assertThatThrownBy(() -> S3TierConfig.builder("kvcache", 1 << 20)
        .fleet(FLEET, "10.0.0.9:7070"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not one of");
    assertThatThrownBy(() -> S3TierConfig.builder("kvcache", 1 << 20)
        .fleet(List.of("10.0.0.1"), "10.0.0.1"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("host:port");
    assertThatThrownBy(() -> new S3TierFactory().open(TierSettings.of(Map.of(
        "bucket", "kvcache", "capacity", "1GiB", "fleet", "a:1,b:1"), "s3."), 1 << 20))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("setting 's3.fleet' needs 's3.fleet-self'");
    assertThatThrownBy(() -> new S3TierFactory().open(TierSettings.of(Map.of(
        "bucket", "kvcache", "capacity", "1GiB", "fleet", "a:1", "fleet-dns", "kv:1",
        "fleet-self", "a:1")), 1 << 20))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("set one");
  }
}
