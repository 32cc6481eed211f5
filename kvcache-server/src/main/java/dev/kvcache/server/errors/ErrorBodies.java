package dev.kvcache.server.errors;

import io.micronaut.http.HttpHeaders;
import io.micronaut.http.HttpMethod;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.MediaType;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.server.exceptions.response.Error;
import io.micronaut.http.server.exceptions.response.ErrorContext;
import io.micronaut.http.server.exceptions.response.ErrorResponseProcessor;
import io.micronaut.http.server.netty.NettyHttpRequest;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import jakarta.inject.Singleton;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * Gives the errors Micronaut answers by itself (no such route, wrong content type, malformed JSON,
 * a body over the size limit) the same short JSON {@link ApiError} body as the server's own,
 * whatever the request accepts, with the status's reason as the code: {@code
 * unsupported-media-type}, {@code bad-request}, ...
 *
 * <p>An HTTP/1.1 request that Netty's decoder gave up on because a part of it was over its limit
 * is a 413 to Micronaut; it is answered with the status that names the part instead: 431 for
 * headers over {@code micronaut.server.netty.max-header-size}, 414 for a request line over {@code
 * micronaut.server.netty.max-initial-line-length}. The connection closes after the answer, since
 * the decoder reads nothing more from it.
 */
@Singleton
class ErrorBodies implements ErrorResponseProcessor<ApiError> {

  @Override
  @SuppressWarnings("unchecked")
  public MutableHttpResponse<ApiError> processResponse(ErrorContext context,
      MutableHttpResponse<?> response) {
    HttpRequest<?> request = context.getRequest();
    Throwable unreadable = request instanceof NettyHttpRequest<?> netty
        ? netty.getNativeRequest().decoderResult().cause()
        : null;
    if (unreadable instanceof TooLongHttpHeaderException) {
      response.status(HttpStatus.REQUEST_HEADER_FIELDS_TOO_LARGE);
    } else if (unreadable instanceof TooLongHttpLineException) {
      response.status(HttpStatus.REQUEST_URI_TOO_LONG);
    }
    if (unreadable != null) {
      response.header(HttpHeaders.CONNECTION, "close");
    }
    if (request.getMethod() == HttpMethod.HEAD) {
      return (MutableHttpResponse<ApiError>) response;
    }
    String code = response.reason().toLowerCase(Locale.ROOT).replace(' ', '-');
    String message = unreadable != null ? unreadable.getMessage()
        : context.getErrors().stream().map(Error::getMessage).collect(Collectors.joining("; "));
    return response.body(new ApiError(code, message.isEmpty() ? response.reason() : message))
        .contentType(MediaType.APPLICATION_JSON_TYPE);
  }
}
