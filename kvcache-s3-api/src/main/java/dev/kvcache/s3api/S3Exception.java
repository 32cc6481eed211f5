package dev.kvcache.s3api;

import java.util.Objects;

/** A request the S3 API refuses, with the error S3 would give and a message for the client. */
public final class S3Exception extends Exception {

  private static final long serialVersionUID = 1L;

  private final transient S3Error error;

  public S3Exception(S3Error error, String message) {
    super(message);
    this.error = Objects.requireNonNull(error, "error");
  }

  /** The S3 error: its code and HTTP status. */
  public S3Error error() {
    return error;
  }
}
