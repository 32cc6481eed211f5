package dev.kvcache;

import dev.kvcache.internal.keys.KeyHashing;
import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.Objects;
import java.util.Optional;

/**
 * The 128-bit identity of a cached block, derived by SHA-256 from its {@link Namespace} and either
 * its token prefix ({@link PrefixKeys}) or a key the engine computed itself ({@link #ofRaw}).
 *
 * <p>Because the namespace digest is hashed into every key, keys of different namespaces never
 * coincide. The key bytes are the first 16 bytes of a SHA-256 digest; {@link #hi()} and {@link
 * #lo()} are those bytes read big-endian, and {@link #toHex()} prints them in order. The exact
 * derivation is specified, with test vectors, in {@code docs/keys.md}.
 *
 * <p><b>The namespace travels with the key.</b> A key derived here ({@link #ofRaw}, {@link
 * PrefixKeys}) remembers its namespace, and {@link #namespace()} returns it: a tier that groups
 * blocks by namespace (the object-storage tier names its objects by it) learns it from the key it
 * is handed. The namespace is not part of the key's identity: keys compare by their 16 bytes alone,
 * and a key rebuilt from its bytes ({@link #of(long, long)}, {@link #fromBytes}, {@link #fromHex})
 * has none, unless rebuilt with {@link #of(Namespace, long, long)}.
 *
 * <p>Instances are immutable, compare by value and take 32 bytes of heap (with compressed
 * references, the JVM's default below 32 GiB of heap; the namespace field fills what was padding).
 */
public final class BlockKey {

  private static final HexFormat HEX = HexFormat.of();

  /** Length of a key in bytes. */
  public static final int BYTES = KeyHashing.KEY_BYTES;

  /** The shortest raw key accepted by {@link #ofRaw}: engines must hash to at least 128 bits. */
  public static final int MIN_RAW_BYTES = 16;

  /** The longest raw key accepted by {@link #ofRaw}. */
  public static final int MAX_RAW_BYTES = 4096;

  private final long hi;
  private final long lo;
  /** The namespace the key was derived in, or null when it was rebuilt from its bytes alone. */
  private final Namespace namespace;

  private BlockKey(long hi, long lo, Namespace namespace) {
    this.hi = hi;
    this.lo = lo;
    this.namespace = namespace;
  }

  /**
   * The key for a block that the engine identifies by its own hash (for example vLLM's block hash).
   *
   * @param namespace the namespace that salts the key
   * @param raw the engine's key bytes, between {@value #MIN_RAW_BYTES} and {@value #MAX_RAW_BYTES}
   *     bytes
   * @throws IllegalArgumentException if {@code raw} is shorter or longer than allowed
   */
  public static BlockKey ofRaw(Namespace namespace, byte[] raw) {
    Objects.requireNonNull(namespace, "namespace");
    Objects.requireNonNull(raw, "raw key");
    if (raw.length < MIN_RAW_BYTES || raw.length > MAX_RAW_BYTES) {
      throw new IllegalArgumentException(
          "raw key is " + raw.length + " bytes; it must be " + MIN_RAW_BYTES + " to "
              + MAX_RAW_BYTES + " bytes (a hash of at least 128 bits)");
    }
    return of(namespace, KeyHashing.rawKey(KeyHashing.sha256(), namespace.digestNoCopy(), raw));
  }

  /** The key of 16 digest bytes derived in {@code namespace}. */
  static BlockKey of(Namespace namespace, byte[] bytes) {
    ByteBuffer b = ByteBuffer.wrap(bytes);
    return new BlockKey(b.getLong(0), b.getLong(8), namespace);
  }

  /**
   * The key for a block that the engine names with a string: an LMCache key string, SGLang's
   * SHA-256 hex digest, any name that carries at least 128 bits of hash. It is {@link
   * #ofRaw(Namespace, byte[])} of the name's UTF-8 bytes, so the Python client's {@code
   * BlockKey.of_raw(namespace, name)} gives the same key.
   *
   * @throws IllegalArgumentException if the name's UTF-8 form is shorter than {@value
   *     #MIN_RAW_BYTES} or longer than {@value #MAX_RAW_BYTES} bytes, or the name is not valid
   *     Unicode (an unpaired surrogate)
   */
  public static BlockKey ofRaw(Namespace namespace, String name) {
    Objects.requireNonNull(name, "name");
    return ofRaw(namespace, KeyHashing.utf8(name));
  }

  /**
   * A key from its 16 bytes, as returned by {@link #toBytes()} (for example read back from disk).
   *
   * @throws IllegalArgumentException if {@code bytes} is not exactly 16 bytes long
   */
  public static BlockKey fromBytes(byte[] bytes) {
    Objects.requireNonNull(bytes, "key bytes");
    if (bytes.length != BYTES) {
      throw new IllegalArgumentException(
          "a block key is " + BYTES + " bytes, got " + bytes.length);
    }
    return of(null, bytes);
  }

  /**
   * A key from its two halves, as returned by {@link #hi()} and {@link #lo()}. It has no {@link
   * #namespace()}.
   */
  public static BlockKey of(long hi, long lo) {
    return new BlockKey(hi, lo, null);
  }

  /**
   * A key from its two halves together with the namespace it was derived in, for a tier that reads
   * back keys it stored with their namespace. The pairing is the caller's word: it is not checked
   * (the key's bytes are a one-way digest of the namespace), and a wrong one files the block under
   * another namespace, where its own namespace's readers do not look.
   */
  public static BlockKey of(Namespace namespace, long hi, long lo) {
    return new BlockKey(hi, lo, Objects.requireNonNull(namespace, "namespace"));
  }

  /**
   * A key from the 32 hex digits printed by {@link #toHex()}; upper or lower case.
   *
   * @throws IllegalArgumentException if {@code hex} is not 32 hex digits
   */
  public static BlockKey fromHex(String hex) {
    Objects.requireNonNull(hex, "hex key");
    if (hex.length() != 2 * BYTES) {
      throw new IllegalArgumentException(
          "a block key is " + 2 * BYTES + " hex digits, got " + hex.length() + ": '" + hex + "'");
    }
    return new BlockKey(parseHex(hex, 0), parseHex(hex, 16), null);
  }

  private static long parseHex(String hex, int from) {
    long v = 0;
    for (int i = from; i < from + 16; i++) {
      char c = hex.charAt(i);
      int d = c < 128 ? Character.digit(c, 16) : -1;
      if (d < 0) {
        throw new IllegalArgumentException(
            "not a hex digit at index " + i + " of block key '" + hex + "'");
      }
      v = (v << 4) | d;
    }
    return v;
  }

  /** The first 8 key bytes, big-endian. */
  public long hi() {
    return hi;
  }

  /** The last 8 key bytes, big-endian. */
  public long lo() {
    return lo;
  }

  /**
   * The namespace the key was derived in, when the key knows it: keys from {@link #ofRaw}, {@link
   * PrefixKeys} and {@link #of(Namespace, long, long)} do, keys rebuilt from their bytes alone do
   * not.
   */
  public Optional<Namespace> namespace() {
    return Optional.ofNullable(namespace);
  }

  /** The 16 key bytes. */
  public byte[] toBytes() {
    byte[] b = new byte[BYTES];
    ByteBuffer.wrap(b).putLong(hi).putLong(lo);
    return b;
  }

  /** The key as 32 lower-case hex digits. */
  public String toHex() {
    return HEX.toHexDigits(hi) + HEX.toHexDigits(lo);
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    return o instanceof BlockKey && ((BlockKey) o).hi == hi && ((BlockKey) o).lo == lo;
  }

  @Override
  public int hashCode() {
    // The bits are a cryptographic digest: any 32 of them are uniformly distributed.
    return (int) lo;
  }

  @Override
  public String toString() {
    return toHex();
  }
}
