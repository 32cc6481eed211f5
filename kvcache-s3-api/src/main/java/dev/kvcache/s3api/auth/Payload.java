package dev.kvcache.s3api.auth;

import dev.kvcache.s3api.S3Error;
import dev.kvcache.s3api.S3Exception;
import java.util.Map;
import java.util.regex.Pattern;

/** How a signed request's body is sent, from its {@code x-amz-content-sha256}. */
public enum Payload {
  /** {@code UNSIGNED-PAYLOAD}: the body as it is, its bytes not signed. */
  UNSIGNED,
  /** A hex SHA-256: the body as it is, which must have that hash. */
  SIGNED,
  /** {@code STREAMING-UNSIGNED-PAYLOAD-TRAILER}: aws-chunked, unsigned chunks, a trailer. */
  STREAMING_UNSIGNED_TRAILER,
  /** {@code STREAMING-AWS4-HMAC-SHA256-PAYLOAD}: aws-chunked, each chunk signed. */
  STREAMING_SIGNED,
  /** {@code STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER}: signed chunks and a signed trailer. */
  STREAMING_SIGNED_TRAILER;

  private static final Pattern HEX_SHA256 = Pattern.compile("[0-9a-fA-F]{64}");
  private static final Map<String, Payload> NAMED = Map.of(
      "UNSIGNED-PAYLOAD", UNSIGNED,
      "STREAMING-UNSIGNED-PAYLOAD-TRAILER", STREAMING_UNSIGNED_TRAILER,
      "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", STREAMING_SIGNED,
      "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", STREAMING_SIGNED_TRAILER);

  /**
   * The form an {@code x-amz-content-sha256} value gives.
   *
   * @throws S3Exception {@code InvalidArgument} for a value that is none of them
   */
  public static Payload of(String contentSha256) throws S3Exception {
    Payload p = NAMED.get(contentSha256);
    if (p != null) {
      return p;
    }
    if (HEX_SHA256.matcher(contentSha256).matches()) {
      return SIGNED;
    }
    throw new S3Exception(S3Error.INVALID_ARGUMENT, "x-amz-content-sha256 must be a hex SHA-256, "
        + "UNSIGNED-PAYLOAD or one of " + NAMED.keySet() + ", not " + contentSha256);
  }

  /** Whether the body comes in aws-chunked frames. */
  public boolean chunked() {
    return this != UNSIGNED && this != SIGNED;
  }

  /** Whether the trailer carries a signature. */
  public boolean trailerSigned() {
    return this == STREAMING_SIGNED_TRAILER;
  }

  /** Whether each chunk carries a signature. */
  public boolean chunksSigned() {
    return this == STREAMING_SIGNED || this == STREAMING_SIGNED_TRAILER;
  }
}
