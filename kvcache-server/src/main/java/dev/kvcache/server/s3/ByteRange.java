package dev.kvcache.server.s3;

import dev.kvcache.s3api.S3Error;
import dev.kvcache.s3api.S3Exception;

/** A GET's {@code Range} header, as S3 reads it: one range of bytes. */
final class ByteRange {

  private ByteRange() {}

  /**
   * The bytes {@code header} asks of an object of {@code length} bytes: {@code {start, end}}, end
   * exclusive; null to send the whole object (a header S3 ignores: not {@code bytes=}, or several
   * ranges).
   *
   * @throws S3Exception {@code InvalidRange} for a range that starts past the object's end
   */
  static long[] parse(String header, long length) throws S3Exception {
    String h = header.strip();
    if (!h.startsWith("bytes=") || h.indexOf(',') >= 0) {
      return null;
    }
    String spec = h.substring("bytes=".length()).strip();
    int dash = spec.indexOf('-');
    if (dash < 0) {
      return null;
    }
    try {
      String first = spec.substring(0, dash).strip();
      String last = spec.substring(dash + 1).strip();
      if (first.isEmpty()) { // the last n bytes
        long n = Long.parseLong(last);
        if (n <= 0 || length == 0) {
          throw unsatisfiable(header, length);
        }
        return new long[] {Math.max(0, length - n), length};
      }
      long start = Long.parseLong(first);
      long end = last.isEmpty() ? length - 1 : Math.min(Long.parseLong(last), length - 1);
      if (start >= length || end < start) {
        throw unsatisfiable(header, length);
      }
      return new long[] {start, end + 1};
    } catch (NumberFormatException e) {
      return null;
    }
  }

  private static S3Exception unsatisfiable(String header, long length) {
    return new S3Exception(S3Error.INVALID_RANGE, "the range " + header
        + " is not satisfiable for an object of " + length + " bytes");
  }
}
