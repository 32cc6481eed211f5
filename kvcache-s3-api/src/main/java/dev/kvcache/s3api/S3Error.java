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
  /** A {@code Content-MD5} header that is not the base64 of 16 bytes. */
  INVALID_DIGEST("InvalidDigest", 400),
  /** A body that cannot be decoded: a broken aws-chunked frame, a missing trailer. */
  INCOMPLETE_BODY("IncompleteBody", 400),
  /** A request the API does not understand. */
  INVALID_REQUEST("InvalidRequest", 400),
  /** An argument out of its range or of the wrong form. */
  INVALID_ARGUMENT("InvalidArgument", 400),
  /** An {@code x-amz-website-redirect-location} that is neither a path nor an http(s) URL. */
  INVALID_REDIRECT_LOCATION("InvalidRedirectLocation", 400),
  /** An object key longer than S3 allows. */
  KEY_TOO_LONG("KeyTooLongError", 400),
  /** A body of an object or a part without its length. */
  MISSING_CONTENT_LENGTH("MissingContentLength", 411),
  /** {@code x-amz-meta-*} headers longer in all than S3 keeps. */
  METADATA_TOO_LARGE("MetadataTooLarge", 400),
  /** A GET of a part the object does not have. */
  INVALID_PART_NUMBER("InvalidPartNumber", 416),
  /** A method the resource does not take. */
  METHOD_NOT_ALLOWED("MethodNotAllowed", 405),
  /** An S3 feature the API does not provide (ACLs, versioning, copies, ...). */
  NOT_IMPLEMENTED("NotImplemented", 501),
  /** No object under the key: never stored, deleted, or evicted by the cache. */
  NO_SUCH_KEY("NoSuchKey", 404),
  /** No bucket of that name. */
  NO_SUCH_BUCKET("NoSuchBucket", 404),
  /** No multipart upload of that id: never created, completed, aborted or expired. */
  NO_SUCH_UPLOAD("NoSuchUpload", 404),
  /** A bucket that still holds objects. */
  BUCKET_NOT_EMPTY("BucketNotEmpty", 409),
  /** A bucket name S3 would not take. */
  INVALID_BUCKET_NAME("InvalidBucketName", 400),
  /** A condition ({@code If-Match}, {@code If-None-Match}) does not hold. */
  PRECONDITION_FAILED("PreconditionFailed", 412),
  /** A range that starts past the object's end. */
  INVALID_RANGE("InvalidRange", 416),
  /** An object larger than the largest block the server stores. */
  ENTITY_TOO_LARGE("EntityTooLarge", 400),
  /** A part of a multipart upload, other than the last, smaller than allowed. */
  ENTITY_TOO_SMALL("EntityTooSmall", 400),
  /** A part named in a completion that was not uploaded, or with another ETag. */
  INVALID_PART("InvalidPart", 400),
  /** The parts of a completion not in ascending order. */
  INVALID_PART_ORDER("InvalidPartOrder", 400),
  /** A request body that is not the XML the operation takes. */
  MALFORMED_XML("MalformedXML", 400),
  /** The server could not take the request now: retry later. */
  SLOW_DOWN("SlowDown", 503),
  /** A failure of the server's own. */
  INTERNAL_ERROR("InternalError", 500);

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
