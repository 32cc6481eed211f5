package dev.kvcache.server.errors;

import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.MediaType;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.serde.annotation.Serdeable;

/**
 * The JSON body of every error the server answers.
 *
 * @param error a short code a client can switch on, such as {@code bad-key}
 * @param message what was wrong, for a person
 */
@Serdeable
public record ApiError(String error, String message) {

  /** An answer with this status and an error body. */
  public static MutableHttpResponse<ApiError> response(HttpStatus status, String error, String message) {
    return HttpResponse.<ApiError>status(status)
        .contentType(MediaType.APPLICATION_JSON_TYPE)
        .body(new ApiError(error, message));
  }
}
