package dev.kvcache.seal;

import static dev.kvcache.testkit.TestBytes.indexOf;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.BlockKey;
import dev.kvcache.Namespace;
import java.nio.ByteBuffer;
import java.security.Provider;
import java.security.Security;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sealed blocks open only as what they were: the block of their key, in their namespace, under the
 * salt and a master key they were sealed with; anything else, a flipped bit included, does not
 * open and leaves nothing behind.
 */
class SealerTest {

  private static final Namespace NS = Namespace.of("m", "bf16", "tp0of1", "team-a");
  private static final Namespace OTHER = Namespace.of("m", "bf16", "tp0of1", "team-b");
  private static final BlockKey KEY = BlockKey.ofRaw(NS, raw(3));

  private static byte[] raw(int n) {
    return ByteBuffer.allocate(16).putInt(12, n).array();
  }

  private static String key(int id, int seed) {
    byte[] k = new byte[32];
    new Random(seed).nextBytes(k);
    return id + ":" + Base64.getEncoder().encodeToString(k);
  }

  private static ByteBuffer block(int length, int seed) {
    byte[] b = new byte[length];
    new Random(seed).nextBytes(b);
    return ByteBuffer.allocateDirect(length).put(b).flip();
  }

  private static ByteBuffer sealed(Sealer s, BlockKey key, ByteBuffer block) {
    ByteBuffer out = ByteBuffer.allocateDirect(Sealer.sealedLength(block.remaining()));
    s.seal(key, block.duplicate(), out);
    assertThat(out.hasRemaining()).isFalse();
    return out.flip();
  }

  private static ByteBuffer opened(Sealer s, BlockKey key, ByteBuffer sealed) {
    ByteBuffer out = ByteBuffer.allocateDirect(Sealer.openedLength(sealed.remaining()));
    return s.open(key, sealed.duplicate(), out) ? out.flip() : null;
  }

  @Test
  void hkdfGivesRfc5869sFirstTestVector() {
    HexFormat hex = HexFormat.of();
    byte[] okm = Hkdf.derive(hex.parseHex("0b".repeat(22)), hex.parseHex("000102030405060708090a0b0c"),
        hex.parseHex("f0f1f2f3f4f5f6f7f8f9"), 42);
    assertThat(hex.formatHex(okm)).isEqualTo("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db0"
        + "2d56ecc4c5bf34007208d5b887185865");
  }

  @Test
  void aSealedBlockOpensToItsBytesAndHoldsNoneOfThemInTheClear() {
    Sealer s = new Sealer(MasterKeys.parse(key(1, 1)), NS, Sealer.newSalt());
    ByteBuffer block = block(2 << 20, 7);
    ByteBuffer sealed = sealed(s, KEY, block);
    assertThat(sealed.remaining()).isEqualTo((2 << 20) + Sealer.OVERHEAD);
    assertThat(sealed.get(0)).as("the key id").isEqualTo((byte) 1);
    assertThat(opened(s, KEY, sealed)).isEqualTo(block);
    byte[] clear = new byte[64];
    block.get(4096, clear);
    byte[] all = new byte[sealed.remaining()];
    sealed.duplicate().get(all);
    assertThat(indexOf(all, clear)).as("64 bytes of the block found in the sealed one").isEqualTo(-1);
    ByteBuffer again = sealed(s, KEY, block);
    assertThat(again).as("a fresh nonce each time").isNotEqualTo(sealed);
  }

  @Test
  void aFlippedBitAnywhereDoesNotOpenAndLeavesNothing() {
    Sealer s = new Sealer(MasterKeys.parse(key(1, 1)), NS, Sealer.newSalt());
    ByteBuffer block = block(64 << 10, 3);
    ByteBuffer sealed = sealed(s, KEY, block);
    for (int at : new int[] {0, 1, 12, 13, 5000, sealed.remaining() - 17, sealed.remaining() - 1}) {
      ByteBuffer damaged = ByteBuffer.allocateDirect(sealed.remaining()).put(sealed.duplicate())
          .flip();
      damaged.put(at, (byte) (damaged.get(at) ^ 0x10));
      ByteBuffer dst = ByteBuffer.allocate(64 << 10);
      assertThat(s.open(KEY, damaged, dst)).as("a bit flipped at %d", at).isFalse();
      assertThat(dst.position()).isZero();
      assertThat(dst.array()).containsOnly((byte) 0);
    }
    assertThat(s.open(KEY, ByteBuffer.allocate(Sealer.OVERHEAD - 1), ByteBuffer.allocate(0)))
        .as("too short").isFalse();
  }

  @Test
  void aBlockOpensOnlyAsItsKeyInItsNamespaceUnderItsSalt() {
    MasterKeys keys = MasterKeys.parse(key(1, 1));
    byte[] salt = Sealer.newSalt();
    Sealer s = new Sealer(keys, NS, salt);
    ByteBuffer sealed = sealed(s, KEY, block(4096, 5));
    assertThat(opened(s, BlockKey.ofRaw(NS, raw(4)), sealed)).as("another key")
        .isNull();
    assertThat(opened(new Sealer(keys, OTHER, salt), KEY, sealed)).as("another namespace")
        .isNull();
    assertThat(opened(new Sealer(keys, NS, Sealer.newSalt()), KEY, sealed))
        .as("a new salt: the namespace's old blocks are shredded").isNull();
    assertThat(opened(new Sealer(MasterKeys.parse(key(1, 2)), NS, salt), KEY, sealed))
        .as("another master key of the same id").isNull();
    assertThat(opened(new Sealer(keys, NS, salt), KEY, sealed)).as("the same").isNotNull();
  }

  @Test
  void aNewMasterKeySealsNewBlocksWhileTheOldOneOpensWhatItSealed() {
    byte[] salt = Sealer.newSalt();
    ByteBuffer old = block(8192, 1);
    ByteBuffer sealedOld = sealed(new Sealer(MasterKeys.parse(key(1, 1)), NS, salt), KEY, old);
    Sealer rotated = new Sealer(MasterKeys.parse(key(1, 1) + "," + key(2, 2)), NS, salt);
    ByteBuffer fresh = block(8192, 2);
    ByteBuffer sealedNew = sealed(rotated, KEY, fresh);
    assertThat(sealedNew.get(0)).as("sealed under the new key").isEqualTo((byte) 2);
    assertThat(opened(rotated, KEY, sealedOld)).isEqualTo(old);
    assertThat(opened(rotated, KEY, sealedNew)).isEqualTo(fresh);
    Sealer retired = new Sealer(MasterKeys.parse(key(2, 2)), NS, salt);
    assertThat(opened(retired, KEY, sealedOld)).as("once the old key is gone").isNull();
    assertThat(opened(retired, KEY, sealedNew)).isEqualTo(fresh);
  }

  @Test
  void aBlockSealedThroughConscryptOpensThroughTheJdksProviderAndTheOtherWayRound() {
    Provider conscrypt = Sealer.fastestProvider();
    assertThat(conscrypt).as("Conscrypt loads here (Linux x86-64)").isNotNull();
    assertThat(Sealer.providerName()).isEqualTo(conscrypt.getName());
    Provider jdk = Security.getProvider("SunJCE");
    MasterKeys keys = MasterKeys.parse(key(1, 1));
    byte[] salt = Sealer.newSalt();
    Sealer fast = new Sealer(keys, NS, salt, conscrypt);
    Sealer own = new Sealer(keys, NS, salt, jdk);
    for (int length : new int[] {0, 1, 4096, 3 << 20}) {
      ByteBuffer block = block(length, length);
      assertThat(opened(own, KEY, sealed(fast, KEY, block))).as("%d bytes", length)
          .isEqualTo(block);
      assertThat(opened(fast, KEY, sealed(own, KEY, block))).as("%d bytes", length)
          .isEqualTo(block);
      ByteBuffer flipped = sealed(fast, KEY, block);
      flipped.put(flipped.limit() - 1, (byte) (flipped.get(flipped.limit() - 1) ^ 1));
      assertThat(opened(own, KEY, flipped)).as("a flipped tag, %d bytes", length).isNull();
    }
  }

  @Test
  void aSaltRecordGivesBackItsSaltAndNothingOnceChanged() {
    byte[] salt = Sealer.newSalt();
    ByteBuffer record = Sealer.saltRecord(salt);
    assertThat(record.remaining()).isEqualTo(Sealer.SALT_RECORD_BYTES);
    assertThat(Sealer.saltOf(record.duplicate())).isEqualTo(salt);
    for (int i = 0; i < Sealer.SALT_RECORD_BYTES; i++) {
      ByteBuffer changed = ByteBuffer.allocate(record.remaining()).put(record.duplicate()).flip();
      changed.put(i, (byte) (changed.get(i) ^ 1));
      assertThat(Sealer.saltOf(changed)).as("byte %d changed", i).isNull();
    }
    assertThat(Sealer.saltOf(record.duplicate().limit(Sealer.SALT_RECORD_BYTES - 1))).isNull();
  }

  @Test
  void masterKeysAreCheckedAndNeverShown(@TempDir Path dir) throws Exception {
    MasterKeys keys = MasterKeys.parse(key(3, 1) + "\n " + key(7, 2) + "\n");
    assertThat(keys.currentId()).isEqualTo(7);
    assertThat(keys.toString()).isEqualTo("MasterKeys[3, 7][current 7]");
    Path file = Files.writeString(dir.resolve("keys"), key(1, 1) + "\n");
    assertThat(MasterKeys.fromFile(file).currentId()).isEqualTo(1);
    assertThatThrownBy(() -> MasterKeys.parse("")).hasMessageContaining("no master key given");
    assertThatThrownBy(() -> MasterKeys.parse("0:" + key(1, 1).substring(2)))
        .hasMessageContaining("entry 1 does not start with a key id from 1 to 255");
    assertThatThrownBy(() -> MasterKeys.parse("1:c2hvcnQ="))
        .hasMessageContaining("master key 1 is 5 bytes; it must be 32");
    assertThatThrownBy(() -> MasterKeys.parse("1:%%%")).hasMessageContaining("not base64");
    assertThatThrownBy(() -> MasterKeys.parse(key(1, 1) + "," + key(1, 2)))
        .hasMessageContaining("master key 1 is given twice");
    Path bad = Files.writeString(dir.resolve("bad"), "2:xx");
    assertThatThrownBy(() -> MasterKeys.fromFile(bad)).hasMessageStartingWith(bad.toString());
  }
}
