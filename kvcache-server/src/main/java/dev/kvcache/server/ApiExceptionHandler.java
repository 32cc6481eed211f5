package dev.kvcache.server;

import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.MediaType;
import io.micronaut.http.annotation.Produces;
import io.micronaut.http.server.exceptions.ExceptionHandler;
import jakarta.inject.Singleton;

/** Answers an {@link ApiException} with its status and an {@link ApiError} body. */
@Produces
@Singleton
class ApiExceptionHandler implements ExceptionHandler<ApiException, HttpResponse<ApiError>> {

  @Override
  public HttpResponse<ApiError> handle(HttpRequest request, ApiException e) {
    return HttpResponse.<ApiError>status(e.status())
        .contentType(MediaType.APPLICATION_JSON_TYPE)
        .body(new ApiError(e.code(), e.getMessage()));
  }
}
