package dev.kvcache.internal.keys;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * The key derivation scheme, version 1; {@code docs/keys.md} is its specification and must change
 * with it (and so must the test vectors).
 *
 * <pre>
 * N    = SHA-256("kvcache.namespace.v1" || field(model) || field(dtype) || field(layout) || field(tenant))
 *        field(s) = u32le(len(utf8(s))) || utf8(s)
 * raw  = SHA-256("kvcache.raw.v1"   || N || rawKeyBytes)[0..16)
 * k[0] = SHA-256("kvcache.block.v1" || N || N[0..16) || u32le(n) || u32le(t[0]) .. u32le(t[n-1]))[0..16)
 * k[i] = SHA-256("kvcache.block.v1" || N || k[i-1]   || u32le(n) || tokens of block i)[0..16)
 * </pre>
 *
 * SHA-256 is chosen because every language has it in its standard library and the JDK uses the
 * CPU's SHA extensions where present; keys are truncated to 128 bits, which keeps the collision
 * probability for 2^40 cached blocks near 2^-49 (docs/keys.md).
 */
public final class KeyHashing {

  public static final int KEY_BYTES = 16;
  public static final int NAMESPACE_DIGEST_BYTES = 32;

  private static final byte[] NAMESPACE_TAG = ascii("kvcache.namespace.v1");
  private static final byte[] RAW_TAG = ascii("kvcache.raw.v1");
  private static final byte[] BLOCK_TAG = ascii("kvcache.block.v1");

  /** Cloned for each digest: {@code MessageDigest.getInstance} searches the providers each time. */
  private static final MessageDigest SHA_256 = newSha256();

  private KeyHashing() {}

  /** A fresh SHA-256 digest. */
  public static MessageDigest sha256() {
    try {
      return (MessageDigest) SHA_256.clone();
    } catch (CloneNotSupportedException e) {
      return newSha256(); // a provider whose digest cannot be cloned
    }
  }

  private static MessageDigest newSha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required by every Java platform", e);
    }
  }

  public static byte[] namespaceDigest(String model, String dtype, String layout, String tenant) {
    MessageDigest md = sha256();
    md.update(NAMESPACE_TAG);
    for (String field : new String[] {model, dtype, layout, tenant}) {
      byte[] utf8 = utf8(field);
      updateU32(md, utf8.length);
      md.update(utf8);
    }
    return md.digest();
  }

  /**
   * The UTF-8 encoding of {@code s}.
   *
   * @throws IllegalArgumentException if {@code s} is not valid Unicode (an unpaired surrogate),
   *     which {@link String#getBytes} would silently turn into '?', making two strings hash alike
   */
  public static byte[] utf8(String s) {
    try {
      ByteBuffer b =
          StandardCharsets.UTF_8
              .newEncoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .encode(CharBuffer.wrap(s));
      byte[] bytes = new byte[b.remaining()];
      b.get(bytes);
      return bytes;
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException("'" + s + "' is not valid Unicode: " + e.getMessage(), e);
    }
  }

  /** The first 16 bytes of the raw-key digest. */
  public static byte[] rawKey(MessageDigest md, byte[] namespaceDigest, byte[] raw) {
    md.reset();
    md.update(RAW_TAG);
    md.update(namespaceDigest);
    md.update(raw);
    return truncate(md.digest());
  }

  /**
   * The first 16 bytes of the chained block digest.
   *
   * @param parent the previous block's 16 key bytes, or the first 16 bytes of the namespace digest
   *     for the first block
   */
  public static byte[] blockKey(
      MessageDigest md, byte[] namespaceDigest, byte[] parent, int[] tokens, int from, int count) {
    md.reset();
    md.update(BLOCK_TAG);
    md.update(namespaceDigest);
    md.update(parent, 0, KEY_BYTES);
    byte[] buf = new byte[4 + 4 * count];
    putU32(buf, 0, count);
    for (int i = 0; i < count; i++) {
      putU32(buf, 4 + 4 * i, tokens[from + i]);
    }
    md.update(buf);
    return truncate(md.digest());
  }

  private static byte[] truncate(byte[] digest) {
    byte[] key = new byte[KEY_BYTES];
    System.arraycopy(digest, 0, key, 0, KEY_BYTES);
    return key;
  }

  private static void updateU32(MessageDigest md, int v) {
    byte[] b = new byte[4];
    putU32(b, 0, v);
    md.update(b);
  }

  private static void putU32(byte[] b, int off, int v) {
    b[off] = (byte) v;
    b[off + 1] = (byte) (v >>> 8);
    b[off + 2] = (byte) (v >>> 16);
    b[off + 3] = (byte) (v >>> 24);
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }
}
