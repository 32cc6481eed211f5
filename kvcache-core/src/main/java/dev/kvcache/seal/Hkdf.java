package dev.kvcache.seal;

import java.security.GeneralSecurityException;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/** HKDF with HMAC-SHA256 (RFC 5869), which the JDK's providers lack before JDK 24. */
final class Hkdf {

  private static final int HASH_BYTES = 32;

  private Hkdf() {}

  /**
   * Derives {@code length} bytes (at most 255 × 32) from input keying material {@code ikm}, with
   * {@code salt} (empty: 32 zero bytes) and {@code info}.
   */
  static byte[] derive(byte[] ikm, byte[] salt, byte[] info, int length) {
    if (length < 1 || length > 255 * HASH_BYTES) {
      throw new IllegalArgumentException("HKDF output of " + length + " bytes");
    }
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(salt.length == 0 ? new byte[HASH_BYTES] : salt, "HmacSHA256"));
      byte[] prk = mac.doFinal(ikm);
      mac.init(new SecretKeySpec(prk, "HmacSHA256"));
      byte[] out = new byte[length];
      byte[] t = new byte[0];
      for (int i = 1, done = 0; done < length; i++) {
        mac.update(t);
        mac.update(info);
        mac.update((byte) i);
        t = mac.doFinal();
        int n = Math.min(t.length, length - done);
        System.arraycopy(t, 0, out, done, n);
        done += n;
      }
      return out;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is missing from this JVM", e);
    }
  }
}
