package dev.kvcache.server.access;

import dev.kvcache.server.errors.ApiError;
import dev.kvcache.wire.Wire;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.http.HttpHeaders;
import io.micronaut.http.HttpMethod;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.annotation.RequestFilter;
import io.micronaut.http.annotation.ServerFilter;
import java.util.List;

/**
 * Checks the bearer token of every request under {@code /v1}: 401 without a known token, 403 when
 * the token may not read or write the namespace the request names. Writes are {@code PUT} and
 * {@code DELETE} of a block or of a namespace's objects; everything else (including pinned lookups
 * and their leases) reads.
 */
@ServerFilter("/v1/**")
class AuthFilter {

  private final Tokens tokens;

  AuthFilter(Tokens tokens) {
    this.tokens = tokens;
  }

  @RequestFilter
  @Nullable
  HttpResponse<ApiError> check(HttpRequest<?> request) {
    if (!tokens.enabled()) {
      return null;
    }
    TokenSettings token = tokens.bearer(request.getHeaders().get(HttpHeaders.AUTHORIZATION));
    if (token == null) {
      return ApiError.response(HttpStatus.UNAUTHORIZED, "unauthorized", "a valid bearer token is required")
          .header(HttpHeaders.WWW_AUTHENTICATE, "Bearer realm=\"kvcache\"");
    }
    String namespace = namespaceOf(request.getPath());
    // releasing a pinned lookup's lease is part of reading; deleting a block is a write
    boolean write = request.getMethod() == HttpMethod.PUT
        || (request.getMethod() == HttpMethod.DELETE && !request.getPath().contains("/leases/"));
    List<String> allowed = write ? token.getWrite() : token.getRead();
    if (namespace == null || !allowed.contains(namespace)) {
      return ApiError.response(HttpStatus.FORBIDDEN, "forbidden", "token '" + token.name() + "' may not "
          + (write ? "write" : "read") + " namespace '" + namespace + "'");
    }
    return null;
  }

  /** The namespace a path under {@code /v1/namespaces/} names, or null. */
  static String namespaceOf(String path) {
    if (!path.startsWith(Wire.NAMESPACES)) {
      return null;
    }
    int end = path.indexOf('/', Wire.NAMESPACES.length());
    return end < 0 ? path.substring(Wire.NAMESPACES.length()) : path.substring(Wire.NAMESPACES.length(), end);
  }
}
