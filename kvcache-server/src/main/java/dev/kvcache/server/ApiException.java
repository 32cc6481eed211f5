package dev.kvcache.server;

import io.micronaut.http.HttpStatus;

/** A request the server refuses: its status, a short code a client can switch on, a message. */
final class ApiException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final HttpStatus status;
  private final String code;

  ApiException(HttpStatus status, String code, String message) {
    super(message, null, false, false);
    this.status = status;
    this.code = code;
  }

  HttpStatus status() {
    return status;
  }

  String code() {
    return code;
  }
}
