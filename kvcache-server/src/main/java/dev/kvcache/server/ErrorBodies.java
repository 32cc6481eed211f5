package dev.kvcache.server;

import io.micronaut.context.annotation.Replaces;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.server.exceptions.response.Error;
import io.micronaut.http.server.exceptions.response.ErrorContext;
import io.micronaut.http.server.exceptions.response.JsonErrorResponseBodyProvider;
import jakarta.inject.Singleton;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * Gives the errors Micronaut answers by itself (no such route, wrong content type, malformed JSON,
 * a body over the size limit) the same short {@link ApiError} body as the server's own, with the
 * status's reason as the code: {@code unsupported-media-type}, {@code bad-request}, ...
 */
@Singleton
@Replaces(JsonErrorResponseBodyProvider.class)
class ErrorBodies implements JsonErrorResponseBodyProvider<ApiError> {

  @Override
  public ApiError body(ErrorContext context, HttpResponse<?> response) {
    String code = response.reason().toLowerCase(Locale.ROOT).replace(' ', '-');
    String message = context.getErrors().stream()
        .map(Error::getMessage)
        .collect(Collectors.joining("; "));
    return new ApiError(code, message.isEmpty() ? response.reason() : message);
  }
}
