package dev.kvcache.server.errors;

import io.micronaut.http.HttpStatus;

/** A request the server refuses: its status, a short code a client can switch on, a message. */
public final class ApiException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final HttpStatus status;
  private final String code;

  public ApiException(HttpStatus status, String code, String message) {
    super(message, null, false, false);
    this.status = status;
    this.code = code;
  }

  public HttpStatus status() {
    return status;
  }

  public String code() {
    return code;
  }
}
