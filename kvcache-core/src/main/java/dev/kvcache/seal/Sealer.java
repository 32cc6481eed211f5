package dev.kvcache.seal;

import dev.kvcache.BlockKey;
import dev.kvcache.Namespace;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.Provider;
import java.security.SecureRandom;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.zip.CRC32C;
import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.SecretKey;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * Seals the blocks of one namespace with AES-256-GCM and opens them again. The key is derived per
 * master key id: HKDF-SHA256 of the master key ({@link MasterKeys}), salted with the namespace's
 * own random salt ({@link #newSalt()}, kept beside its blocks), with the namespace's digest in the
 * derivation's info. A sealed block is
 *
 * <pre>
 *   u8       keyId    the master key's id
 *   u8[12]   nonce    random
 *   u8[n]    ciphertext, as long as the block
 *   u8[16]   tag
 * </pre>
 *
 * <p>with the namespace's digest, the block's key and the key id as associated data: a sealed block
 * opens only as the block of its key, in its namespace, under the salt it was sealed with. A
 * block whose tag fails, whose key id is not among the master keys, or whose salt was destroyed
 * (crypto-shredding) does not open ({@link #open} says false) and nothing of it is handed out.
 *
 * <p>AES-GCM goes through Conscrypt (BoringSSL) when it is on the class path and its native library
 * loads, and through the JDK's own provider otherwise: Conscrypt sealed and opened blocks at 2.2 to
 * 3.4 times the JDK's speed here ({@code docs/benchmarks/sealing.md}); the bytes are the same
 * either way. Thread-safe.
 */
public final class Sealer {

  /** Bytes of a sealed block's key id. */
  public static final int KEY_ID_BYTES = 1;
  /** Bytes of a sealed block's nonce. */
  public static final int NONCE_BYTES = 12;
  /** Bytes of a sealed block's tag. */
  public static final int TAG_BYTES = 16;
  /** Bytes a sealed block has beyond the block. */
  public static final int OVERHEAD = KEY_ID_BYTES + NONCE_BYTES + TAG_BYTES;
  /** Bytes of a namespace's salt. */
  public static final int SALT_BYTES = 32;
  /** Bytes of a salt as kept beside the blocks ({@link #saltRecord}): the salt, its CRC32C. */
  public static final int SALT_RECORD_BYTES = SALT_BYTES + 4;

  private static final byte[] INFO = "kvcache seal v1 ".getBytes(StandardCharsets.US_ASCII);
  private static final Provider PROVIDER = fastestProvider();
  private static final ThreadLocal<SecureRandom> RANDOM = ThreadLocal.withInitial(SecureRandom::new);
  private static final ThreadLocal<Cipher> CIPHERS = ThreadLocal.withInitial(Sealer::newCipher);

  private final Provider provider;
  private final MasterKeys masters;
  private final Namespace namespace;
  private final byte[] digest;
  private final byte[] salt;
  private final Map<Integer, SecretKey> derived = new ConcurrentHashMap<>();

  /**
   * A sealer of {@code namespace}'s blocks under {@code masters}, with the namespace's salt.
   *
   * @throws IllegalArgumentException if the salt is not {@value #SALT_BYTES} bytes
   */
  public Sealer(MasterKeys masters, Namespace namespace, byte[] salt) {
    this(masters, namespace, salt, PROVIDER);
  }

  /** As the public constructor, with AES-GCM through {@code provider} (null: the JDK's). */
  Sealer(MasterKeys masters, Namespace namespace, byte[] salt, Provider provider) {
    this.provider = provider;
    this.masters = Objects.requireNonNull(masters, "masters");
    this.namespace = Objects.requireNonNull(namespace, "namespace");
    if (salt.length != SALT_BYTES) {
      throw new IllegalArgumentException("a namespace's salt is " + SALT_BYTES + " bytes, got "
          + salt.length);
    }
    this.salt = salt.clone();
    this.digest = namespace.digest();
  }

  /** A new random salt for a namespace. */
  public static byte[] newSalt() {
    byte[] salt = new byte[SALT_BYTES];
    RANDOM.get().nextBytes(salt);
    return salt;
  }

  /**
   * A salt as the tiers keep it, in a file or an object: its {@value #SALT_BYTES} bytes and their
   * CRC32C (big-endian), {@value #SALT_RECORD_BYTES} bytes ready to be read.
   */
  public static ByteBuffer saltRecord(byte[] salt) {
    if (salt.length != SALT_BYTES) {
      throw new IllegalArgumentException("a namespace's salt is " + SALT_BYTES + " bytes, got "
          + salt.length);
    }
    CRC32C crc = new CRC32C();
    crc.update(salt);
    return ByteBuffer.allocate(SALT_RECORD_BYTES).put(salt).putInt((int) crc.getValue()).flip();
  }

  /**
   * The salt a {@link #saltRecord} holds (its remaining bytes); null if it is not one: another
   * length, or a checksum that fails.
   */
  public static byte[] saltOf(ByteBuffer record) {
    if (record.remaining() != SALT_RECORD_BYTES) {
      return null;
    }
    byte[] salt = new byte[SALT_BYTES];
    record.get(record.position(), salt);
    CRC32C crc = new CRC32C();
    crc.update(salt);
    return record.getInt(record.position() + SALT_BYTES) == (int) crc.getValue() ? salt : null;
  }

  /** The name of the provider AES-GCM goes through: Conscrypt's, or the JDK's. */
  public static String providerName() {
    return PROVIDER != null ? PROVIDER.getName() : newCipher().getProvider().getName();
  }

  /** The namespace whose blocks this sealer seals. */
  public Namespace namespace() {
    return namespace;
  }

  /** The length of a block of {@code length} bytes once sealed. */
  public static int sealedLength(int length) {
    return length + OVERHEAD;
  }

  /** The length of the block a sealed one of {@code sealedLength} bytes holds; -1 if too short. */
  public static int openedLength(int sealedLength) {
    return sealedLength < OVERHEAD ? -1 : sealedLength - OVERHEAD;
  }

  /**
   * Seals the remaining bytes of {@code block}, the block of {@code key}, into {@code dst} under
   * the current master key, advancing both by what they gave and took.
   *
   * @throws java.nio.BufferOverflowException if {@code dst} has less room than {@link
   *     #sealedLength}
   */
  public void seal(BlockKey key, ByteBuffer block, ByteBuffer dst) {
    if (dst.remaining() < sealedLength(block.remaining())) {
      throw new java.nio.BufferOverflowException();
    }
    int id = masters.currentId();
    byte[] nonce = new byte[NONCE_BYTES];
    RANDOM.get().nextBytes(nonce);
    dst.put((byte) id).put(nonce);
    try {
      Cipher c = cipher();
      c.init(Cipher.ENCRYPT_MODE, derivedKey(id), new GCMParameterSpec(TAG_BYTES * 8, nonce));
      c.updateAAD(associatedData(key, id));
      c.doFinal(block, dst);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("AES-GCM failed to seal a block of " + namespace, e);
    }
  }

  /**
   * Opens the remaining bytes of {@code sealed}, a sealed block of {@code key}, into {@code dst}.
   *
   * @return true, with the block in {@code dst} (advanced past it) and {@code sealed} consumed;
   *     false if it does not open (its tag fails, its key id is unknown, it was sealed for
   *     another key, namespace or salt, or it is too short), with nothing of it left in {@code dst}
   * @throws java.nio.BufferOverflowException if {@code dst} has less room than the block
   */
  public boolean open(BlockKey key, ByteBuffer sealed, ByteBuffer dst) {
    int length = openedLength(sealed.remaining());
    if (length < 0) {
      return false;
    }
    if (dst.remaining() < length) {
      throw new java.nio.BufferOverflowException();
    }
    int start = sealed.position();
    int id = sealed.get(start) & 0xff;
    SecretKey k = masters.key(id) == null ? null : derivedKey(id);
    if (k == null) {
      return false;
    }
    byte[] nonce = new byte[NONCE_BYTES];
    sealed.get(start + KEY_ID_BYTES, nonce);
    int out = dst.position();
    try {
      Cipher c = cipher();
      c.init(Cipher.DECRYPT_MODE, k, new GCMParameterSpec(TAG_BYTES * 8, nonce));
      c.updateAAD(associatedData(key, id));
      ByteBuffer body = sealed.duplicate().position(start + KEY_ID_BYTES + NONCE_BYTES);
      c.doFinal(body, dst);
      sealed.position(sealed.limit());
      return true;
    } catch (AEADBadTagException e) {
      wipe(dst, out);
      return false;
    } catch (GeneralSecurityException e) {
      wipe(dst, out);
      throw new IllegalStateException("AES-GCM failed to open a block of " + namespace, e);
    }
  }

  /** Zeroes what a failed open may have written from {@code from}, and goes back there. */
  private static void wipe(ByteBuffer dst, int from) {
    for (int i = from; i < dst.position(); i++) {
      dst.put(i, (byte) 0);
    }
    dst.position(from);
  }

  private byte[] associatedData(BlockKey key, int id) {
    return ByteBuffer.allocate(digest.length + 17).put(digest).putLong(key.hi())
        .putLong(key.lo()).put((byte) id).array();
  }

  private SecretKey derivedKey(int id) {
    return derived.computeIfAbsent(id, i -> {
      byte[] info = ByteBuffer.allocate(INFO.length + digest.length).put(INFO).put(digest)
          .array();
      return new SecretKeySpec(Hkdf.derive(masters.key(i).getEncoded(), salt, info,
          MasterKeys.KEY_BYTES), "AES");
    });
  }

  /** This thread's cipher of this sealer's provider. */
  private Cipher cipher() {
    return provider == PROVIDER ? CIPHERS.get() : newCipher(provider);
  }

  private static Cipher newCipher() {
    return newCipher(PROVIDER);
  }

  private static Cipher newCipher(Provider provider) {
    try {
      return provider != null ? Cipher.getInstance("AES/GCM/NoPadding", provider)
          : Cipher.getInstance("AES/GCM/NoPadding");
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("AES/GCM/NoPadding is missing from this JVM", e);
    }
  }

  /** Conscrypt's provider if it is on the class path and loads here; null otherwise. */
  static Provider fastestProvider() {
    try {
      Class<?> conscrypt = Class.forName("org.conscrypt.Conscrypt");
      if (!(Boolean) conscrypt.getMethod("isAvailable").invoke(null)) {
        return null;
      }
      return (Provider) conscrypt.getMethod("newProvider").invoke(null);
    } catch (ReflectiveOperationException | LinkageError e) {
      return null;
    }
  }

  @Override
  public String toString() {
    return "Sealer[" + namespace + ", " + masters + "]";
  }
}
