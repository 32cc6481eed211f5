package dev.kvcache.server.access;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * The right a route under {@code /v1} needs on the namespace it names: {@link AuthFilter} reads
 * it from the route a request matched. A route without one is refused to every token.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
public @interface Access {

  /** What the route needs. */
  Right value();

  /** The rights a token has on a namespace ({@link TokenSettings}). */
  enum Right {
    /** Reads blocks, looks them up, pins and fetches them, releases its pins. */
    READ,
    /** Stores and deletes blocks, drops a namespace's objects. */
    WRITE
  }
}
