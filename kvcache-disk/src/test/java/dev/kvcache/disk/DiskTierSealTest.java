package dev.kvcache.disk;

import static dev.kvcache.testkit.TestBytes.indexOf;
import static dev.kvcache.testkit.TestBytes.random;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.BlockWriter;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.Namespace;
import dev.kvcache.PutStatus;
import dev.kvcache.seal.MasterKeys;
import dev.kvcache.spi.NamespaceRemoval;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierSettings;
import dev.kvcache.tiered.Durability;
import dev.kvcache.tiered.KvCacheBuilder;
import dev.kvcache.tiered.TieredCacheConfig;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sealed namespaces on the disk tier ({@link DiskTierConfig.Builder#sealing}): their blocks read
 * back as they were put, no file of the directory holds their bytes, a damaged record is a miss,
 * a shredded namespace's blocks never open again (even from files copied aside before), and a new
 * master key seals new blocks while the old one opens what it sealed.
 */
class DiskTierSealTest {

  private static final Namespace SEALED = Namespace.of("m", "bf16", "tp0of1", "sealed");
  private static final Namespace PLAIN = Namespace.of("m", "bf16", "tp0of1", "plain");
  private static final int[] LENGTHS = {64 << 10, 2 << 20, 4096};

  @TempDir Path temp;

  private static String masterKey(int id) {
    byte[] k = new byte[32];
    new Random(id).nextBytes(k);
    return id + ":" + Base64.getEncoder().encodeToString(k);
  }

  private static BlockKey key(Namespace ns, int n) {
    return BlockKey.ofRaw(ns, ByteBuffer.allocate(16).putInt(12, n).array());
  }

  private DiskTier open(String keys) throws IOException {
    return DiskTier.open(DiskTierConfig.builder(temp.resolve("tier"), 64L << 20)
        .superBlockBytes(8L << 20).minFreeBytes(0).syncPolicy(SyncPolicy.NONE)
        .sealing(MasterKeys.parse(keys), List.of(SEALED)).build());
  }

  private static void put(DiskTier tier, BlockKey key, byte[] block) {
    assertThat(tier.put(key, ByteBuffer.wrap(block))).isEqualTo(PutStatus.STORED);
  }

  /** The block read into a buffer and through a lease, both equal to {@code block}; or a miss. */
  private static boolean holds(DiskTier tier, BlockKey key, byte[] block) {
    ByteBuffer dst = ByteBuffer.allocateDirect(block.length);
    GetStatus status = tier.getInto(key, dst);
    if (status == GetStatus.MISS) {
      return false;
    }
    assertThat(status).isEqualTo(GetStatus.HIT);
    assertThat(dst.flip()).isEqualTo(ByteBuffer.wrap(block));
    try (BlockLease lease = tier.get(key)) {
      assertThat(lease.status()).isEqualTo(GetStatus.HIT);
      assertThat(lease.bytes()).isEqualTo(ByteBuffer.wrap(block));
    }
    return true;
  }

  /** Every byte of every file under the tier's directory, end to end. */
  private byte[] allFiles() throws IOException {
    var out = new java.io.ByteArrayOutputStream();
    try (Stream<Path> files = Files.walk(temp.resolve("tier"))) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        out.write(Files.readAllBytes(f));
      }
    }
    return out.toByteArray();
  }

  @Test
  void sealedBlocksReadBackAndNoFileHoldsTheirBytes() throws IOException {
    byte[][] blocks = new byte[LENGTHS.length][];
    byte[] plain = random(64 << 10, 99);
    try (DiskTier tier = open(masterKey(1))) {
      for (int i = 0; i < LENGTHS.length; i++) {
        blocks[i] = random(LENGTHS[i], i);
        put(tier, key(SEALED, i), blocks[i]);
      }
      byte[] parts = random(96 << 10, 7); // a block that arrives in parts
      try (BlockWriter w = tier.writer(key(SEALED, 10), parts.length)) {
        w.write(ByteBuffer.wrap(parts, 0, 40 << 10));
        w.write(ByteBuffer.wrap(parts, 40 << 10, 56 << 10));
        assertThat(w.commit()).isEqualTo(PutStatus.STORED);
      }
      put(tier, key(PLAIN, 0), plain);
      for (int i = 0; i < LENGTHS.length; i++) {
        assertThat(holds(tier, key(SEALED, i), blocks[i])).as("sealed block %d", i).isTrue();
      }
      assertThat(holds(tier, key(SEALED, 10), parts)).isTrue();
      assertThat(holds(tier, key(PLAIN, 0), plain)).isTrue();
    }
    byte[] files = allFiles();
    for (int i = 0; i < LENGTHS.length; i++) {
      for (int at : new int[] {0, LENGTHS[i] / 2, LENGTHS[i] - 64}) {
        byte[] window = java.util.Arrays.copyOfRange(blocks[i], at, at + 64);
        assertThat(indexOf(files, window)).as("block %d's bytes at %d in the files", i, at)
            .isEqualTo(-1);
      }
    }
    assertThat(indexOf(files, java.util.Arrays.copyOfRange(plain, 1000, 1064)))
        .as("the unsealed namespace's block, as the search would find any").isNotEqualTo(-1);
    try (DiskTier tier = open(masterKey(1))) {
      for (int i = 0; i < LENGTHS.length; i++) {
        assertThat(holds(tier, key(SEALED, i), blocks[i])).as("after a restart").isTrue();
      }
    }
  }

  @Test
  void aCacheOverADiskSealsTheNamespacesItIsToldTo() throws IOException {
    Map<String, String> disk = Map.of("dir", temp.resolve("tier").toString(), "capacity",
        "64MiB", "min-free", "0B", "sync-policy", "none");
    byte[] block = random(256 << 10, 4);
    byte[] plain = random(256 << 10, 5);
    try (KvCache cache = KvCacheBuilder.newBuilder().ramBytes(4L << 20).maxBlockBytes(1 << 20)
        .lower("disk", TierSettings.of(disk))
        .tiered(TieredCacheConfig.defaults().withDurability(Durability.WRITE_THROUGH))
        .sealing(MasterKeys.parse(masterKey(1)), List.of(SEALED)).build()) {
      assertThat(cache.put(key(SEALED, 0), ByteBuffer.wrap(block))).isEqualTo(PutStatus.STORED);
      assertThat(cache.put(key(PLAIN, 0), ByteBuffer.wrap(plain))).isEqualTo(PutStatus.STORED);
    }
    byte[] files = allFiles();
    assertThat(indexOf(files, java.util.Arrays.copyOfRange(block, 5000, 5064))).isEqualTo(-1);
    assertThat(indexOf(files, java.util.Arrays.copyOfRange(plain, 5000, 5064))).isNotEqualTo(-1);
    try (DiskTier tier = open(masterKey(1))) {
      assertThat(holds(tier, key(SEALED, 0), block)).isTrue();
    }
  }

  @Test
  void aRemovedNamespaceIsGoneFromRamAndDiskItsSaltFirstAndTheOthersStay() throws Exception {
    Map<String, String> disk = Map.of("dir", temp.resolve("tier").toString(), "capacity",
        "64MiB", "min-free", "0B", "sync-policy", "none");
    int blocks = 24; // 6 MiB through 4 MiB of RAM: some in RAM, some only on disk
    try (Tier cache = KvCacheBuilder.newBuilder().ramBytes(4L << 20).maxBlockBytes(1 << 20)
        .lower("disk", TierSettings.of(disk))
        .sealing(MasterKeys.parse(masterKey(1)), List.of(SEALED)).build()) {
      for (int i = 0; i < blocks; i++) {
        assertThat(cache.put(key(SEALED, i), ByteBuffer.wrap(random(256 << 10, i))))
            .isEqualTo(PutStatus.STORED);
        assertThat(cache.put(key(PLAIN, i), ByteBuffer.wrap(random(256 << 10, 100 + i))))
            .isEqualTo(PutStatus.STORED);
      }
      NamespaceRemoval removal = cache.capability(NamespaceRemoval.class).orElseThrow();
      Map<String, Long> removed = removal.removeNamespace(SEALED);
      assertThat(removed.keySet()).containsExactly("ram", "disk");
      assertThat(removed.get("ram") + removed.get("disk")).isGreaterThanOrEqualTo(blocks);
      assertThat(removed.get("disk")).isPositive();
      assertThat(temp.resolve("tier").resolve("salts")).isEmptyDirectory();
      ByteBuffer dst = ByteBuffer.allocateDirect(256 << 10);
      for (int i = 0; i < blocks; i++) {
        assertThat(cache.getInto(key(SEALED, i), dst.clear())).as("removed %d", i)
            .isEqualTo(GetStatus.MISS);
      }
      for (int i = blocks - 4; i < blocks; i++) {
        assertThat(cache.getInto(key(PLAIN, i), dst.clear())).isEqualTo(GetStatus.HIT);
        assertThat(dst.flip()).isEqualTo(ByteBuffer.wrap(random(256 << 10, 100 + i)));
      }
    }
    try (DiskTier tier = open(masterKey(1))) {
      for (int i = 0; i < blocks; i++) {
        assertThat(holds(tier, key(SEALED, i), random(256 << 10, i))).as("after a restart")
            .isFalse();
      }
      assertThat(holds(tier, key(PLAIN, 0), random(256 << 10, 100))).isTrue();
    }
  }

  @Test
  void aDamagedSealedRecordIsAMissNeverWrongBytes() throws IOException {
    byte[] block = random(64 << 10, 3);
    try (DiskTier tier = open(masterKey(1))) {
      put(tier, key(SEALED, 0), block);
    }
    Path sb = DiskFiles.superBlocks(temp.resolve("tier")).get(0);
    byte[] bytes = Files.readAllBytes(sb);
    int header = indexOf(bytes, "kvrb".getBytes(StandardCharsets.US_ASCII));
    bytes[header + 64 + 1000] ^= 0x04;
    Files.write(sb, bytes);
    try (DiskTier tier = open(masterKey(1))) {
      assertThat(holds(tier, key(SEALED, 0), block)).isFalse();
    }
  }

  @Test
  void aShreddedNamespacesBlocksNeverOpenAgainEvenFromFilesCopiedAside() throws IOException {
    Path tier = temp.resolve("tier");
    Path aside = Files.createDirectories(temp.resolve("aside"));
    byte[] block = random(256 << 10, 5);
    byte[] plain = random(256 << 10, 6);
    try (DiskTier t = open(masterKey(1))) {
      put(t, key(SEALED, 0), block);
      put(t, key(SEALED, 1), block);
      put(t, key(PLAIN, 0), plain);
      for (Path f : DiskFiles.superBlocks(tier)) {
        Files.copy(f, aside.resolve(f.getFileName()));
      }
      assertThat(t.shred(SEALED)).isTrue();
      assertThat(holds(t, key(SEALED, 0), block)).as("at once, before any delete").isFalse();
      assertThat(t.sealFailures()).isEqualTo(1);
      assertThat(holds(t, key(PLAIN, 0), plain)).as("another namespace's").isTrue();
      byte[] fresh = random(4096, 8);
      put(t, key(SEALED, 2), fresh);
      assertThat(holds(t, key(SEALED, 2), fresh)).as("a put after, under a new salt").isTrue();
    }
    for (Path f : DiskFiles.superBlocks(aside)) {
      Files.copy(f, tier.resolve(f.getFileName()), StandardCopyOption.REPLACE_EXISTING);
    }
    try (DiskTier t = open(masterKey(1))) {
      assertThat(holds(t, key(SEALED, 1), block)).as("from the files copied aside").isFalse();
      assertThat(t.sealFailures()).isEqualTo(1);
    }
  }

  @Test
  void aNewMasterKeySealsNewBlocksWhileTheOldOneOpensWhatItSealed() throws IOException {
    byte[] old = random(64 << 10, 1);
    byte[] fresh = random(64 << 10, 2);
    try (DiskTier tier = open(masterKey(1))) {
      put(tier, key(SEALED, 0), old);
    }
    try (DiskTier tier = open(masterKey(1) + "," + masterKey(2))) {
      put(tier, key(SEALED, 1), fresh);
      assertThat(holds(tier, key(SEALED, 0), old)).as("sealed under key 1").isTrue();
      assertThat(holds(tier, key(SEALED, 1), fresh)).as("sealed under key 2").isTrue();
    }
    try (DiskTier tier = open(masterKey(2))) {
      assertThat(holds(tier, key(SEALED, 1), fresh)).isTrue();
      assertThat(holds(tier, key(SEALED, 0), old)).as("once key 1 is gone").isFalse();
      assertThat(tier.sealFailures()).isEqualTo(1);
    }
  }
}
