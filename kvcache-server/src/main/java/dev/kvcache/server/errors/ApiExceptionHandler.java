package dev.kvcache.server.errors;

import io.micronaut.http.HttpHeaders;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpVersion;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.annotation.Produces;
import io.micronaut.http.server.exceptions.ExceptionHandler;
import jakarta.inject.Singleton;

/**
 * Answers an {@link ApiException} with its status and an {@link ApiError} body. An error to a
 * request with a body may leave part of the body unread (a refused PUT is answered from its
 * headers), so over HTTP/1.1 the connection is closed after the answer: its client, still sending
 * or not, would otherwise find the rest of the body taken for its next request. (HTTP/2 resets or
 * drains just the stream.)
 */
@Produces
@Singleton
class ApiExceptionHandler implements ExceptionHandler<ApiException, HttpResponse<ApiError>> {

  @Override
  public HttpResponse<ApiError> handle(HttpRequest request, ApiException e) {
    MutableHttpResponse<ApiError> response = ApiError.response(e.status(), e.code(), e.getMessage());
    boolean mayLeaveBodyUnread = request.getContentLength() > 0
        || request.getHeaders().contains(HttpHeaders.TRANSFER_ENCODING);
    if (mayLeaveBodyUnread && request.getHttpVersion() != HttpVersion.HTTP_2_0) {
      response.header(HttpHeaders.CONNECTION, "close");
    }
    return response;
  }
}
