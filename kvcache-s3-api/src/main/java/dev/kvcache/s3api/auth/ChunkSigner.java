package dev.kvcache.s3api.auth;

/**
 * The signatures of a streamed body's chunks and trailer ({@code STREAMING-AWS4-HMAC-SHA256-PAYLOAD}
 * and its {@code -TRAILER} form): each chunk's signature signs its bytes' SHA-256 and the
 * signature before it, starting from the request's own.
 */
public final class ChunkSigner {

  private final byte[] signingKey;
  private final String amzDate;
  private final String scope;
  private final String seed;

  ChunkSigner(byte[] signingKey, String amzDate, String scope, String seed) {
    this.signingKey = signingKey;
    this.amzDate = amzDate;
    this.scope = scope;
    this.seed = seed;
  }

  /** The request's signature: the one the first chunk's signature follows. */
  public String seed() {
    return seed;
  }

  /** The signature of a chunk whose bytes have the SHA-256 {@code chunkSha256}. */
  public String chunk(String previous, byte[] chunkSha256) {
    return sign("AWS4-HMAC-SHA256-PAYLOAD\n" + amzDate + "\n" + scope + "\n" + previous + "\n"
        + Hashes.EMPTY_SHA256 + "\n" + Hashes.hex(chunkSha256));
  }

  /** The signature of the trailer whose canonical lines ({@code name:value\n}) hash to this. */
  public String trailer(String previous, byte[] trailerSha256) {
    return sign("AWS4-HMAC-SHA256-TRAILER\n" + amzDate + "\n" + scope + "\n" + previous + "\n"
        + Hashes.hex(trailerSha256));
  }

  /** Whether {@code given} is {@code expected}, compared in constant time. */
  public static boolean matches(String expected, String given) {
    return Hashes.sameSignature(expected, given);
  }

  private String sign(String stringToSign) {
    return Hashes.hex(Hashes.hmac(signingKey, stringToSign));
  }
}
