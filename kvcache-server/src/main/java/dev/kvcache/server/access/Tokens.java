package dev.kvcache.server.access;

import jakarta.inject.Singleton;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.List;

/** The configured bearer tokens; with none configured, every caller may do everything. */
@Singleton
public class Tokens {

  /** The shortest secret taken: 128 bits written as hex. */
  static final int MIN_SECRET_LENGTH = 32;

  private static final String BEARER = "Bearer ";

  private final List<TokenSettings> tokens;

  Tokens(List<TokenSettings> tokens) {
    for (TokenSettings t : tokens) {
      if (t.getSecret() == null || t.getSecret().length() < MIN_SECRET_LENGTH) {
        throw new IllegalArgumentException("kvcache.auth.tokens." + t.name()
            + ".secret must be at least " + MIN_SECRET_LENGTH + " characters");
      }
    }
    this.tokens = List.copyOf(tokens);
  }

  public boolean enabled() {
    return !tokens.isEmpty();
  }

  /**
   * The token an {@code Authorization} header value presents ({@code Bearer <secret>}, the scheme
   * in any case), or null.
   */
  public TokenSettings bearer(CharSequence authorization) {
    String header = authorization == null ? null : authorization.toString();
    return header != null && header.regionMatches(true, 0, BEARER, 0, BEARER.length())
        ? find(header.substring(BEARER.length()).trim())
        : null;
  }

  /** The token whose S3 access key is {@code accessKey}, or null. */
  public TokenSettings byAccessKey(String accessKey) {
    for (TokenSettings t : tokens) {
      if (accessKey.equals(t.getAccessKey())) {
        return t;
      }
    }
    return null;
  }

  /** The token with this secret, compared in constant time, or null. */
  TokenSettings find(String secret) {
    byte[] presented = secret.getBytes(StandardCharsets.UTF_8);
    TokenSettings found = null;
    for (TokenSettings t : tokens) {
      if (MessageDigest.isEqual(presented, t.getSecret().getBytes(StandardCharsets.UTF_8))) {
        found = t;
      }
    }
    return found;
  }
}
