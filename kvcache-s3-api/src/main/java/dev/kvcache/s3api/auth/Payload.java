package dev.kvcache.s3api.auth;

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
