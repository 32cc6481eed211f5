package dev.kvcache.s3api.auth;

import java.util.Collection;
import java.util.List;

/** What {@link SigV4Verifier} reads of an HTTP request: its line as sent, and its headers. */
public interface RequestParts {

  /** The method, upper case: {@code GET}, {@code PUT}. */
  String method();

  /** The path as on the request line, percent-encoded as the client sent it, without the query. */
  String rawPath();

  /** The query as on the request line, after the {@code ?}; empty if there is none. */
  String rawQuery();

  /** The names of the request's headers, lower case. */
  Collection<String> headerNames();

  /** The values of the header {@code name} (given in lower case), in order; empty if absent. */
  List<String> header(String name);

  /** The first value of the header {@code name} (lower case), stripped; null if absent. */
  default String first(String name) {
    List<String> v = header(name);
    return v.isEmpty() ? null : v.get(0).strip();
  }
}
