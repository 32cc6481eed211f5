package dev.kvcache.server.http;

import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;

/** The {@code date} header of answers written outside Micronaut, formatted once a second. */
final class HttpDate {

  private static volatile Formatted last = new Formatted(0, "");

  private HttpDate() {}

  static String now() {
    long second = System.currentTimeMillis() / 1000;
    Formatted f = last;
    if (f.second != second) {
      f = new Formatted(second,
          DateTimeFormatter.RFC_1123_DATE_TIME.format(ZonedDateTime.now(ZoneOffset.UTC)));
      last = f;
    }
    return f.value;
  }

  private record Formatted(long second, String value) {}
}
