package dev.kvcache.server.s3;

import dev.kvcache.s3api.S3Error;
import dev.kvcache.s3api.S3Exception;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A GET's {@code Range} header, as S3 reads it: one range of bytes. */
final class ByteRange {

  private ByteRange() {}

  /** The one form of range S3 serves: {@code bytes=first-last}, either end left out. */
  private static final Pattern FORM = Pattern.compile("bytes=(\\d*)-(\\d*)");

  /**
   * The bytes {@code header} asks of an object of {@code length} bytes: {@code {start, end}}, end
   * exclusive; null to send the whole object, as S3 does for a header it does not take (not
   * {@code bytes=}, several ranges, spaces, signs, letters, a last byte before the first, a
   * suffix of an empty object).
   *
   * @throws S3Exception {@code InvalidRange} for a range that starts past the object's end, or an
   *     empty suffix ({@code bytes=-0})
   */
  static long[] parse(String header, long length) throws S3Exception {
    Matcher m = FORM.matcher(header.strip());
    if (!m.matches() || m.group(1).isEmpty() && m.group(2).isEmpty()) {
      return null;
    }
    try {
      if (m.group(1).isEmpty()) { // the last n bytes
        long n = Long.parseLong(m.group(2));
        if (n == 0) {
          throw unsatisfiable(header, length);
        }
        return length == 0 ? null : new long[] {Math.max(0, length - n), length};
      }
      long start = Long.parseLong(m.group(1));
      if (!m.group(2).isEmpty() && Long.parseLong(m.group(2)) < start) {
        return null;
      }
      if (start >= length) {
        throw unsatisfiable(header, length);
      }
      long end = m.group(2).isEmpty() ? length - 1 : Math.min(Long.parseLong(m.group(2)), length - 1);
      return new long[] {start, end + 1};
    } catch (NumberFormatException e) {
      return null; // more digits than a long holds
    }
  }

  private static S3Exception unsatisfiable(String header, long length) {
    return new S3Exception(S3Error.INVALID_RANGE, "the range " + header
        + " is not satisfiable for an object of " + length + " bytes");
  }
}
