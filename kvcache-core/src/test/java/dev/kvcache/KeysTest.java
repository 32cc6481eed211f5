package dev.kvcache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The key types as a user of the API sees them: BlockKey, Namespace and PrefixKeys. */
class KeysTest {

  private static final Namespace NS = Namespace.of("llama-3.1-8b", "bf16", "tp0of1");
  private static final String HEX = "00112233445566778899aabbccddeeff";

  private static byte[] raw(int length, int seed) {
    byte[] b = new byte[length];
    for (int i = 0; i < length; i++) {
      b[i] = (byte) (seed + 7 * i);
    }
    return b;
  }

  private static int[] tokens(int n, int seed) {
    return IntStream.range(0, n).map(i -> seed * 1000 + i).toArray();
  }

  @Nested
  class BlockKeys {

    @Test
    void hexRoundTrip() {
      BlockKey key = BlockKey.fromHex(HEX);
      assertThat(key.toHex()).isEqualTo(HEX);
      assertThat(key.toString()).isEqualTo(HEX);
      assertThat(key.hi()).isEqualTo(0x0011223344556677L);
      assertThat(key.lo()).isEqualTo(0x8899aabbccddeeffL);
    }

    @Test
    void upperCaseHexIsAcceptedAndPrintedInLowerCase() {
      BlockKey upper = BlockKey.fromHex(HEX.toUpperCase());
      assertThat(upper).isEqualTo(BlockKey.fromHex(HEX));
      assertThat(upper.toHex()).isEqualTo(HEX);
    }

    @Test
    void bytesRoundTripInBigEndianOrder() {
      BlockKey key = BlockKey.fromHex(HEX);
      byte[] bytes = key.toBytes();
      assertThat(bytes).hasSize(BlockKey.BYTES).hasSize(16);
      assertThat(bytes[0]).isEqualTo((byte) 0x00);
      assertThat(bytes[1]).isEqualTo((byte) 0x11);
      assertThat(bytes[15]).isEqualTo((byte) 0xff);
      assertThat(BlockKey.fromBytes(bytes)).isEqualTo(key);
      // toBytes returns a copy: changing it does not change the key
      bytes[0] = 42;
      assertThat(key.toHex()).isEqualTo(HEX);
    }

    @Test
    void halvesRoundTrip() {
      BlockKey key = BlockKey.of(-1L, Long.MIN_VALUE);
      assertThat(key.toHex()).isEqualTo("ffffffffffffffff8000000000000000");
      assertThat(BlockKey.of(key.hi(), key.lo())).isEqualTo(key);
      assertThat(BlockKey.fromHex(key.toHex())).isEqualTo(key);
      assertThat(BlockKey.fromBytes(key.toBytes())).isEqualTo(key);
      assertThat(BlockKey.of(0, 0).toHex()).isEqualTo("0".repeat(32));
    }

    @Test
    void equalityIsByValue() {
      BlockKey a = BlockKey.of(1, 2);
      BlockKey b = BlockKey.fromHex("00000000000000010000000000000002");
      assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
      assertThat(a).isNotEqualTo(BlockKey.of(2, 1));
      assertThat(a).isNotEqualTo(BlockKey.of(1, 3));
      assertThat(a).isNotEqualTo(BlockKey.of(0, 2));
      assertThat(a).isNotEqualTo(null);
      assertThat(a).isNotEqualTo(HEX);
    }


    @Test
    void derivedKeysKnowTheirNamespaceAndRebuiltOnesDoNot() {
      BlockKey raw = BlockKey.ofRaw(NS, raw(16, 1));
      BlockKey named = BlockKey.ofRaw(NS, "lmcache@key@0123456789abcdef");
      PrefixKeys prefix = PrefixKeys.of(NS, 4);
      List<BlockKey> chain = prefix.keysFor(tokens(8, 1));
      BlockKey next = prefix.next(chain.get(0), tokens(8, 1), 4);

      for (BlockKey k : List.of(raw, named, chain.get(0), chain.get(1), next)) {
        assertThat(k.namespace()).contains(NS);
      }
      BlockKey rebuilt = BlockKey.fromBytes(raw.toBytes());
      assertThat(rebuilt.namespace()).isEmpty();
      assertThat(BlockKey.fromHex(raw.toHex()).namespace()).isEmpty();
      assertThat(BlockKey.of(raw.hi(), raw.lo()).namespace()).isEmpty();
      assertThat(rebuilt).isEqualTo(raw).hasSameHashCodeAs(raw);
      assertThat(BlockKey.of(NS, raw.hi(), raw.lo()).namespace()).contains(NS);
      assertThat(BlockKey.of(NS, raw.hi(), raw.lo())).isEqualTo(raw);
    }
    @Test
    void wrongLengthHexIsRejectedWithItsLength() {
      assertThatThrownBy(() -> BlockKey.fromHex(HEX.substring(1)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("32 hex digits")
          .hasMessageContaining("31");
      assertThatThrownBy(() -> BlockKey.fromHex(HEX + "0"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("33");
      assertThatThrownBy(() -> BlockKey.fromHex(""))
          .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void nonHexDigitIsRejectedNamingItsIndex() {
      String bad = HEX.substring(0, 20) + "g" + HEX.substring(21);
      assertThatThrownBy(() -> BlockKey.fromHex(bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("not a hex digit")
          .hasMessageContaining("index 20");
      String badHigh = "x" + HEX.substring(1);
      assertThatThrownBy(() -> BlockKey.fromHex(badHigh))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("index 0");
      String sign = "-" + HEX.substring(1);
      assertThatThrownBy(() -> BlockKey.fromHex(sign)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void nonAsciiDigitsAreNotHex() {
      assertThatThrownBy(() -> BlockKey.fromHex("\u0660".repeat(32))) // ARABIC-INDIC DIGIT ZERO
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> BlockKey.fromHex("\uFF21".repeat(32))) // FULLWIDTH LATIN A
          .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void wrongLengthBytesAreRejected() {
      assertThatThrownBy(() -> BlockKey.fromBytes(new byte[15]))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("16 bytes")
          .hasMessageContaining("15");
      assertThatThrownBy(() -> BlockKey.fromBytes(new byte[32]))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("32");
      assertThatThrownBy(() -> BlockKey.fromBytes(null)).isInstanceOf(NullPointerException.class);
      assertThatThrownBy(() -> BlockKey.fromHex(null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void rawKeysOfAcceptedLengthsAreDeterministic() {
      for (int len : new int[] {BlockKey.MIN_RAW_BYTES, 32, BlockKey.MAX_RAW_BYTES}) {
        assertThat(BlockKey.ofRaw(NS, raw(len, 1))).isEqualTo(BlockKey.ofRaw(NS, raw(len, 1)));
      }
      assertThat(BlockKey.ofRaw(NS, raw(16, 1))).isNotEqualTo(BlockKey.ofRaw(NS, raw(16, 2)));
      assertThat(BlockKey.ofRaw(NS, raw(16, 1))).isNotEqualTo(BlockKey.ofRaw(NS, raw(17, 1)));
    }

    @Test
    void rawKeysOutsideTheAllowedLengthsAreRejected() {
      assertThatThrownBy(() -> BlockKey.ofRaw(NS, new byte[15]))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("15 bytes")
          .hasMessageContaining("128 bits");
      assertThatThrownBy(() -> BlockKey.ofRaw(NS, new byte[0]))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("128 bits");
      assertThatThrownBy(() -> BlockKey.ofRaw(NS, new byte[4097]))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("4097")
          .hasMessageContaining("4096");
      assertThatThrownBy(() -> BlockKey.ofRaw(NS, (byte[]) null)).isInstanceOf(NullPointerException.class);
      assertThatThrownBy(() -> BlockKey.ofRaw(null, raw(16, 0)))
          .isInstanceOf(NullPointerException.class);
    }
  }

  @Nested
  class Namespaces {

    @Test
    void emptyModelDtypeOrLayoutIsRejected() {
      assertThatThrownBy(() -> Namespace.of("", "bf16", "tp0of1"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("model");
      assertThatThrownBy(() -> Namespace.of("m", "", "tp0of1"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("dtype");
      assertThatThrownBy(() -> Namespace.of("m", "bf16", ""))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("layout");
    }

    @Test
    void tenantMayBeEmptyAndEqualsTheTenantlessNamespace() {
      Namespace withEmptyTenant = Namespace.of("m", "bf16", "tp0of1", "");
      assertThat(withEmptyTenant.tenant()).isEmpty();
      assertThat(withEmptyTenant).isEqualTo(Namespace.of("m", "bf16", "tp0of1"));
    }

    @Test
    void nullFieldsAreRejected() {
      assertThatThrownBy(() -> Namespace.of(null, "bf16", "l"))
          .isInstanceOf(NullPointerException.class)
          .hasMessageContaining("model");
      assertThatThrownBy(() -> Namespace.of("m", null, "l"))
          .isInstanceOf(NullPointerException.class)
          .hasMessageContaining("dtype");
      assertThatThrownBy(() -> Namespace.of("m", "bf16", null))
          .isInstanceOf(NullPointerException.class)
          .hasMessageContaining("layout");
      assertThatThrownBy(() -> Namespace.of("m", "bf16", "l", null))
          .isInstanceOf(NullPointerException.class)
          .hasMessageContaining("tenant");
    }

    @Test
    void fieldsAreLimitedTo1024Utf8Bytes() {
      // 'ü' is two UTF-8 bytes: 512 of them are exactly the limit, 513 exceed it.
      String atLimit = "ü".repeat(512);
      String overLimit = "ü".repeat(513);
      assertThat(Namespace.of(atLimit, "bf16", "l").model()).isEqualTo(atLimit);
      assertThat(Namespace.of("m", "bf16", "l", "x".repeat(1024)).tenant()).hasSize(1024);
      assertThatThrownBy(() -> Namespace.of(overLimit, "bf16", "l"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("model")
          .hasMessageContaining("1026")
          .hasMessageContaining("1024");
      assertThatThrownBy(() -> Namespace.of("m", "x".repeat(1025), "l"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("dtype");
      assertThatThrownBy(() -> Namespace.of("m", "bf16", "x".repeat(1025)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("layout");
      assertThatThrownBy(() -> Namespace.of("m", "bf16", "l", "x".repeat(1025)))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("tenant");
    }

    @Test
    void fieldsThatAreNotValidUnicodeAreRejected() {
      // an unpaired surrogate has no UTF-8 encoding; encoding it as '?' would let "t\uD800" and
      // "t?" share keys
      assertThat(Namespace.of("m", "bf16", "tp0of1", "t?").tenant()).isEqualTo("t?");
      assertThatThrownBy(() -> Namespace.of("m", "bf16", "tp0of1", "t\uD800"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("tenant")
          .hasMessageContaining("not valid Unicode");
      assertThatThrownBy(() -> Namespace.of("m\uDC00", "bf16", "tp0of1"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("model");
    }

    @Test
    void equalNamespacesAreEqual() {
      Namespace a = Namespace.of("m", "bf16", "tp0of1", "t");
      Namespace b = Namespace.of("m", "bf16", "tp0of1", "t");
      assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
      assertThat(a.digest()).isEqualTo(b.digest()).hasSize(32);
      assertThat(PrefixKeys.of(a, 4).keysFor(tokens(8, 1)))
          .isEqualTo(PrefixKeys.of(b, 4).keysFor(tokens(8, 1)));
      assertThat(BlockKey.ofRaw(a, raw(16, 3))).isEqualTo(BlockKey.ofRaw(b, raw(16, 3)));
    }

    @Test
    void digestIsACopy() {
      Namespace a = Namespace.of("m", "bf16", "tp0of1");
      byte[] digest = a.digest();
      digest[0] ^= 1;
      assertThat(a.digest()).isNotEqualTo(digest);
      assertThat(a).isEqualTo(Namespace.of("m", "bf16", "tp0of1"));
    }

    @Test
    void everyFieldIsolatesKeys() {
      List<Namespace> namespaces =
          List.of(
              Namespace.of("m", "bf16", "tp0of1"),
              Namespace.of("m", "bf16", "tp0of1", "tenant-a"),
              Namespace.of("m", "bf16", "tp0of1", "tenant-b"),
              Namespace.of("other-model", "bf16", "tp0of1"),
              Namespace.of("m", "fp16", "tp0of1"),
              Namespace.of("m", "bf16", "tp1of2"),
              // field boundaries are part of the digest: moving a character between fields matters
              Namespace.of("mb", "f16", "tp0of1"));
      int[] prompt = tokens(32, 5);
      byte[] rawKey = raw(32, 9);
      for (int i = 0; i < namespaces.size(); i++) {
        for (int j = i + 1; j < namespaces.size(); j++) {
          Namespace a = namespaces.get(i);
          Namespace b = namespaces.get(j);
          assertThat(a).as("%s vs %s", a, b).isNotEqualTo(b);
          List<BlockKey> ka = PrefixKeys.of(a, 16).keysFor(prompt);
          List<BlockKey> kb = PrefixKeys.of(b, 16).keysFor(prompt);
          assertThat(ka).as("prefix keys of %s vs %s", a, b).doesNotContainAnyElementsOf(kb);
          assertThat(BlockKey.ofRaw(a, rawKey))
              .as("raw keys of %s vs %s", a, b)
              .isNotEqualTo(BlockKey.ofRaw(b, rawKey));
        }
      }
    }
  }

  @Nested
  class Prefixes {

    private final PrefixKeys prefix = PrefixKeys.of(NS, 16);

    @Test
    void onlyFullBlocksGetKeys() {
      assertThat(prefix.keysFor(tokens(40, 1))).hasSize(2);
      assertThat(prefix.keysFor(tokens(48, 1))).hasSize(3);
      assertThat(prefix.keysFor(tokens(15, 1))).isEmpty();
      assertThat(prefix.keysFor(new int[0])).isEmpty();
      // the trailing partial block does not influence the keys of the full blocks
      assertThat(prefix.keysFor(tokens(40, 1))).isEqualTo(prefix.keysFor(tokens(32, 1)));
    }

    @Test
    void equalPrefixesGiveEqualLeadingKeys() {
      int[] a = tokens(64, 1);
      int[] b = Arrays.copyOf(a, 64);
      b[63] = -7; // differs in the last block only
      List<BlockKey> ka = prefix.keysFor(a);
      List<BlockKey> kb = prefix.keysFor(b);
      assertThat(ka.subList(0, 3)).isEqualTo(kb.subList(0, 3));
      assertThat(ka.get(3)).isNotEqualTo(kb.get(3));
      assertThat(prefix.keysFor(Arrays.copyOf(a, 32))).isEqualTo(ka.subList(0, 2));
    }

    @Test
    void aChangeInOneBlockChangesItsKeyAndAllLaterKeys() {
      int[] a = tokens(64, 1);
      int[] b = a.clone();
      b[20] += 1; // block 1
      List<BlockKey> ka = prefix.keysFor(a);
      List<BlockKey> kb = prefix.keysFor(b);
      assertThat(kb.get(0)).isEqualTo(ka.get(0));
      for (int i = 1; i < 4; i++) {
        assertThat(kb.get(i)).as("key %d", i).isNotEqualTo(ka.get(i));
      }
    }

    @Test
    void keysDependOnTheBlockSize() {
      int[] t = tokens(32, 1);
      assertThat(PrefixKeys.of(NS, 8).keysFor(t)).hasSize(4);
      assertThat(PrefixKeys.of(NS, 8).keysFor(t))
          .doesNotContainAnyElementsOf(PrefixKeys.of(NS, 16).keysFor(t));
      assertThat(PrefixKeys.of(NS, 8).blockSizeTokens()).isEqualTo(8);
      assertThat(PrefixKeys.of(NS, 8).namespace()).isEqualTo(NS);
    }

    @Test
    void allKeysOfAPromptAreDistinct() {
      int[] same = new int[16 * 50]; // fifty identical blocks still get fifty different keys
      assertThat(prefix.keysFor(same)).hasSize(50).doesNotHaveDuplicates();
    }

    @Test
    void blockSizeBelowOneIsRejected() {
      assertThatThrownBy(() -> PrefixKeys.of(NS, 0))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("at least 1")
          .hasMessageContaining("0");
      assertThatThrownBy(() -> PrefixKeys.of(NS, -16))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("-16");
      assertThatThrownBy(() -> PrefixKeys.of(null, 16)).isInstanceOf(NullPointerException.class);
      assertThatThrownBy(() -> prefix.keysFor(null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void nextExtendsAPromptBlockByBlock() {
      int[] t = tokens(48, 3);
      List<BlockKey> keys = prefix.keysFor(t);
      assertThat(prefix.next(null, t, 0)).isEqualTo(keys.get(0));
      assertThat(prefix.next(keys.get(0), t, 16)).isEqualTo(keys.get(1));
      assertThat(prefix.next(keys.get(1), t, 32)).isEqualTo(keys.get(2));
      // the block may start anywhere in the array
      int[] shifted = new int[t.length + 5];
      System.arraycopy(t, 0, shifted, 5, t.length);
      assertThat(prefix.next(keys.get(0), shifted, 21)).isEqualTo(keys.get(1));
    }

    @Test
    void nextOutsideTheArrayThrowsIndexOutOfBounds() {
      int[] t = tokens(40, 1);
      assertThatThrownBy(() -> prefix.next(null, t, 25))
          .isInstanceOf(IndexOutOfBoundsException.class);
      assertThatThrownBy(() -> prefix.next(null, t, -1))
          .isInstanceOf(IndexOutOfBoundsException.class);
      assertThatThrownBy(() -> prefix.next(null, t, 41))
          .isInstanceOf(IndexOutOfBoundsException.class);
      assertThatThrownBy(() -> prefix.next(null, new int[15], 0))
          .isInstanceOf(IndexOutOfBoundsException.class);
      assertThat(prefix.next(null, t, 24)).as("the last block that fits")
          .isEqualTo(prefix.keysFor(Arrays.copyOfRange(t, 24, 40)).get(0));
      assertThatThrownBy(() -> prefix.next(null, null, 0))
          .isInstanceOf(NullPointerException.class);
    }
  }
}
