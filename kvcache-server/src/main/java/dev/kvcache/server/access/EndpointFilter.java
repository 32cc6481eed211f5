package dev.kvcache.server.access;

import dev.kvcache.server.errors.ApiError;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.http.HttpHeaders;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.annotation.RequestFilter;
import io.micronaut.http.annotation.ResponseFilter;
import io.micronaut.http.annotation.ServerFilter;
import io.micronaut.management.health.indicator.HealthResult;
import java.util.Map;

/**
 * The server's own endpoints once bearer tokens are configured: {@code /prometheus} (every
 * namespace's name and traffic) needs a token with the {@code metrics} right (401 without a known
 * token, 403 without the right); {@code /health} answers anyone, but its details (the cache's
 * problems, the object store's last error with its host names) only to such a token: others get
 * the status alone, {@code UP}, {@code DEGRADED} or {@code DOWN}, with the same status code, as an
 * orchestrator's probes need. Without tokens (a server on loopback) both answer everything.
 */
@ServerFilter({"/prometheus", "/prometheus/**", "/health", "/health/**"})
class EndpointFilter {

  private final Tokens tokens;

  EndpointFilter(Tokens tokens) {
    this.tokens = tokens;
  }

  @RequestFilter
  @Nullable
  HttpResponse<ApiError> check(HttpRequest<?> request) {
    if (!tokens.enabled() || !request.getPath().startsWith("/prometheus")) {
      return null;
    }
    TokenSettings token = tokens.bearer(request.getHeaders().get(HttpHeaders.AUTHORIZATION));
    if (token == null) {
      return AuthFilter.unauthorized("the metrics need a bearer token with the metrics right");
    }
    if (!token.isMetrics()) {
      return ApiError.response(HttpStatus.FORBIDDEN, "forbidden",
          "token '" + token.name() + "' may not read the metrics (kvcache.auth.tokens."
              + token.name() + ".metrics)");
    }
    return null;
  }

  @ResponseFilter
  void statusAlone(HttpRequest<?> request, MutableHttpResponse<?> response) {
    if (!tokens.enabled() || !request.getPath().startsWith("/health")) {
      return;
    }
    TokenSettings token = tokens.bearer(request.getHeaders().get(HttpHeaders.AUTHORIZATION));
    if (token != null && token.isMetrics()) {
      return;
    }
    Object body = response.getBody().orElse(null);
    if (body instanceof HealthResult health) {
      @SuppressWarnings("unchecked")
      MutableHttpResponse<Object> answer = (MutableHttpResponse<Object>) response;
      answer.body(Map.of("status", health.getStatus().getName()));
    }
  }
}
