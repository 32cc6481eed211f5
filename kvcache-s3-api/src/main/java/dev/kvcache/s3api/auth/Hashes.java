package dev.kvcache.s3api.auth;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/** SHA-256 and HMAC-SHA256 as SigV4 uses them, and the MD5 of {@code Content-MD5}. */
public final class Hashes {

  /** The hex SHA-256 of no bytes. */
  static final String EMPTY_SHA256 = hex(sha256(new byte[0]));

  private Hashes() {}

  /** A new SHA-256 digest. */
  public static MessageDigest newSha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-256", e);
    }
  }

  /** A new MD5 digest, for the {@code Content-MD5} a client may send with a body. */
  public static MessageDigest newMd5() {
    try {
      return MessageDigest.getInstance("MD5");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no MD5", e);
    }
  }

  static byte[] sha256(byte[] bytes) {
    return newSha256().digest(bytes);
  }

  static byte[] hmac(byte[] key, String data) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("the JDK has no HmacSHA256", e);
    }
  }

  static String hex(byte[] bytes) {
    return HexFormat.of().formatHex(bytes);
  }

  /** Whether two hex signatures are equal, in a time that does not depend on where they differ. */
  static boolean sameSignature(String expected, String given) {
    return MessageDigest.isEqual(expected.getBytes(StandardCharsets.US_ASCII),
        given.toLowerCase(java.util.Locale.ROOT).getBytes(StandardCharsets.US_ASCII));
  }
}
