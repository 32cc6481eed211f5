package dev.kvcache.client;

/**
 * A server answered in a way no retry or miss can hide: the token was refused (401, 403), the
 * namespace is not served (404 on it), or the server failed (5xx). A server that cannot be reached
 * is not an error: its blocks are misses until it is back.
 */
public class RemoteTierException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final int status;

  RemoteTierException(int status, String message) {
    super(message);
    this.status = status;
  }

  /** The HTTP status the server answered. */
  public int status() {
    return status;
  }
}
