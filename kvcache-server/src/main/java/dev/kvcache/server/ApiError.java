package dev.kvcache.server;

import io.micronaut.serde.annotation.Serdeable;

/**
 * The JSON body of every error the server answers.
 *
 * @param error a short code a client can switch on, such as {@code bad-key}
 * @param message what was wrong, for a person
 */
@Serdeable
record ApiError(String error, String message) {}
