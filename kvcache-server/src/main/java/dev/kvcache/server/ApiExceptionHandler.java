package dev.kvcache.server;

import io.micronaut.http.HttpHeaders;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.HttpVersion;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.annotation.Produces;
import io.micronaut.http.server.exceptions.ExceptionHandler;
import jakarta.inject.Singleton;

/**
 * Answers an {@link ApiException} with its status and an {@link ApiError} body. A body refused as
 * too large or too slow is left unread, so over HTTP/1.1 the connection is closed after the
 * answer: a client still sending would otherwise wait on a socket nobody reads. (HTTP/2 resets just
 * the stream.)
 */
@Produces
@Singleton
class ApiExceptionHandler implements ExceptionHandler<ApiException, HttpResponse<ApiError>> {

  @Override
  public HttpResponse<ApiError> handle(HttpRequest request, ApiException e) {
    MutableHttpResponse<ApiError> response = ApiError.response(e.status(), e.code(), e.getMessage());
    boolean bodyLeftUnread = e.status() == HttpStatus.REQUEST_ENTITY_TOO_LARGE
        || e.status() == HttpStatus.REQUEST_TIMEOUT;
    if (bodyLeftUnread && request.getHttpVersion() != HttpVersion.HTTP_2_0) {
      response.header(HttpHeaders.CONNECTION, "close");
    }
    return response;
  }
}
