package dev.kvcache.s3api;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/** Percent-encoding as S3 and SigV4 write it, and decoding of paths and query parameters. */
public final class PercentEncoding {

  private PercentEncoding() {}

  /**
   * {@code raw} percent-decoded to its bytes: {@code %XX} becomes the byte, every other character
   * its UTF-8 bytes ({@code +} stays a {@code +}); a {@code %} not followed by two hex digits
   * stays as it is.
   */
  public static byte[] decodeToBytes(String raw) {
    byte[] in = raw.getBytes(StandardCharsets.UTF_8);
    ByteArrayOutputStream out = new ByteArrayOutputStream(in.length);
    for (int i = 0; i < in.length; i++) {
      int hi;
      int lo;
      if (in[i] == '%' && i + 2 < in.length && (hi = Character.digit(in[i + 1], 16)) >= 0
          && (lo = Character.digit(in[i + 2], 16)) >= 0) {
        out.write(hi << 4 | lo);
        i += 2;
      } else {
        out.write(in[i]);
      }
    }
    return out.toByteArray();
  }

  /**
   * A query's parameters, decoded, in the order sent; a parameter without {@code =} has the empty
   * value, and a name given twice keeps its last value.
   */
  public static Map<String, String> queryParameters(String rawQuery) {
    Map<String, String> out = new LinkedHashMap<>();
    for (String part : rawQuery.split("&")) {
      if (!part.isEmpty()) {
        int eq = part.indexOf('=');
        out.put(decode(eq < 0 ? part : part.substring(0, eq)),
            eq < 0 ? "" : decode(part.substring(eq + 1)));
      }
    }
    return out;
  }

  /** {@code raw} percent-decoded, read as UTF-8. */
  public static String decode(String raw) {
    return new String(decodeToBytes(raw), StandardCharsets.UTF_8);
  }

  /**
   * SigV4's URI encoding of {@code bytes}, which S3 uses for keys too: the unreserved characters
   * ({@code A-Z a-z 0-9 - _ . ~}) as they are, {@code /} as it is if {@code keepSlash}, every
   * other byte {@code %XX}.
   */
  public static String encode(byte[] bytes, boolean keepSlash) {
    StringBuilder b = new StringBuilder(bytes.length + 16);
    for (byte x : bytes) {
      int c = x & 0xff;
      if (c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
          || c == '_' || c == '.' || c == '~' || c == '/' && keepSlash) {
        b.append((char) c);
      } else {
        b.append('%').append(HEX[c >>> 4]).append(HEX[c & 15]);
      }
    }
    return b.toString();
  }

  /** {@link #encode(byte[], boolean)} of {@code text}'s UTF-8. */
  public static String encode(String text, boolean keepSlash) {
    return encode(text.getBytes(StandardCharsets.UTF_8), keepSlash);
  }

  private static final char[] HEX = "0123456789ABCDEF".toCharArray();
}
