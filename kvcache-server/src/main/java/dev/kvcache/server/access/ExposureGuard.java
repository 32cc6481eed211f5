package dev.kvcache.server.access;

import io.micronaut.context.annotation.Context;
import io.micronaut.context.annotation.Value;
import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * Refuses to start a server that would listen beyond loopback with no bearer token configured:
 * anyone who could reach it could read and overwrite every namespace.
 */
@Context
class ExposureGuard {

  ExposureGuard(@Value("${micronaut.server.host:}") String host, Tokens tokens) {
    if (!tokens.enabled() && !isLoopback(host)) {
      throw new IllegalStateException("refusing to listen on "
          + (host.isBlank() ? "every interface" : "'" + host + "'")
          + " without authentication: configure kvcache.auth.tokens (see docs/server.md),"
          + " or listen on loopback (micronaut.server.host=127.0.0.1)");
    }
  }

  static boolean isLoopback(String host) {
    if (host.isBlank()) {
      return false;
    }
    try {
      for (InetAddress address : InetAddress.getAllByName(host)) {
        if (!address.isLoopbackAddress()) {
          return false;
        }
      }
      return true;
    } catch (UnknownHostException e) {
      throw new IllegalStateException("micronaut.server.host '" + host + "' does not resolve", e);
    }
  }
}
