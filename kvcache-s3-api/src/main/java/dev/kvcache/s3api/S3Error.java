package dev.kvcache.s3api;

/**
 * The errors of the S3 API, each with the code S3 gives it (the {@code Code} of its error XML) and
 * its HTTP status.
 */
public enum S3Error {
  /** No credentials, a scope that does not allow the request, or a presigned URL past its time. */
  ACCESS_DENIED("AccessDenied", 403),
  /** The access key is not one the server knows. */
  INVALID_ACCESS_KEY_ID("InvalidAccessKeyId", 403),
  /** The signature is not the one the secret gives this request (or chunk, or trailer). */
  SIGNATURE_DOES_NOT_MATCH("SignatureDoesNotMatch", 403),
  /** The request's time is more than the allowed skew from the server's. */
  REQUEST_TIME_TOO_SKEWED("RequestTimeTooSkewed", 403),
  /** The {@code Authorization} header cannot be parsed. */
  AUTHORIZATION_HEADER_MALFORMED("AuthorizationHeaderMalformed", 400),
  /** A presigned URL's query parameters are missing or cannot be parsed. */
  AUTHORIZATION_QUERY_PARAMETERS_ERROR("AuthorizationQueryParametersError", 400),
  /** The SHA-256 the client signed ({@code x-amz-content-sha256}) is not that of the body. */
  X_AMZ_CONTENT_SHA256_MISMATCH("XAmzContentSHA256Mismatch", 400),
  /** A checksum the client sent does not match the bytes received. */
  BAD_DIGEST("BadDigest", 400),
  /** A body that cannot be decoded: a broken aws-chunked frame, a missing trailer. */
  INCOMPLETE_BODY("IncompleteBody", 400),
  /** A request the API does not understand. */
  INVALID_REQUEST("InvalidRequest", 400),
  /** An argument out of its range or of the wrong form. */
  INVALID_ARGUMENT("InvalidArgument", 400);

  private final String code;
  private final int status;

  S3Error(String code, int status) {
    this.code = code;
    this.status = status;
  }

  /** The error's code as S3 names it. */
  public String code() {
    return code;
  }

  /** The HTTP status of an answer with this error. */
  public int status() {
    return status;
  }
}
