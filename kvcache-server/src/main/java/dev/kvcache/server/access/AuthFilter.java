package dev.kvcache.server.access;

import dev.kvcache.server.errors.ApiError;
import dev.kvcache.wire.Wire;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.http.HttpHeaders;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.annotation.RequestFilter;
import io.micronaut.http.annotation.ServerFilter;
import io.micronaut.web.router.RouteAttributes;
import io.micronaut.web.router.RouteMatch;
import java.util.List;

/**
 * Checks the bearer token of every request under {@code /v1}: 401 without a known token, 403 when
 * the token may not read or write the namespace the request names. The right needed is the one
 * the matched route declares ({@link Access}); a route that declares none is refused to every
 * token, and a request that matches no route is left to be answered 404 or 405 once its token is
 * known.
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
      return unauthorized("a valid bearer token is required");
    }
    RouteMatch<?> route = RouteAttributes.getRouteMatch(request).orElse(null);
    if (route == null) {
      return null; // no such route: answered as such
    }
    Access.Right right = route.getAnnotationMetadata().enumValue(Access.class, Access.Right.class)
        .orElse(null);
    if (right == null) {
      return ApiError.response(HttpStatus.FORBIDDEN, "forbidden",
          "the route of " + request.getMethod() + " " + request.getPath()
              + " declares no right a token could have");
    }
    String namespace = namespaceOf(request.getPath());
    boolean write = right == Access.Right.WRITE;
    List<String> allowed = write ? token.getWrite() : token.getRead();
    if (namespace == null || !allowed.contains(namespace)) {
      return ApiError.response(HttpStatus.FORBIDDEN, "forbidden", "token '" + token.name() + "' may not "
          + (write ? "write" : "read") + " namespace '" + namespace + "'");
    }
    return null;
  }

  /** A 401 that asks for a bearer token, saying {@code why}. */
  static MutableHttpResponse<ApiError> unauthorized(String why) {
    return ApiError.response(HttpStatus.UNAUTHORIZED, "unauthorized", why)
        .header(HttpHeaders.WWW_AUTHENTICATE, "Bearer realm=\"kvcache\"");
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
