package dev.kvcache.s3api.auth;

import dev.kvcache.s3api.PercentEncoding;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The canonical forms of SigV4 for S3: the URI encoding, the path (not normalized, encoded once),
 * the query (parameters sorted) and header values (trimmed, inner runs of spaces made one).
 */
final class Canonical {

  private Canonical() {}

  /** The canonical path of S3: the decoded path encoded once, {@code /} kept; "/" if empty. */
  static String path(String rawPath) {
    return rawPath.isEmpty() ? "/" : PercentEncoding.encode(PercentEncoding.decodeToBytes(rawPath), true);
  }

  /**
   * The canonical query: each parameter's name and value decoded and encoded again, sorted by name
   * then value, joined with {@code &}; parameters named {@code skip} left out.
   */
  static String query(String rawQuery, String skip) {
    List<String[]> encoded = new ArrayList<>();
    for (String[] p : pairs(rawQuery)) {
      if (!p[0].equals(skip)) {
        encoded.add(new String[] {PercentEncoding.encode(p[0].getBytes(StandardCharsets.UTF_8), false),
            PercentEncoding.encode(p[1].getBytes(StandardCharsets.UTF_8), false)});
      }
    }
    encoded.sort((a, b) -> {
      int c = a[0].compareTo(b[0]);
      return c != 0 ? c : a[1].compareTo(b[1]);
    });
    StringBuilder b = new StringBuilder();
    for (String[] p : encoded) {
      if (b.length() > 0) {
        b.append('&');
      }
      b.append(p[0]).append('=').append(p[1]);
    }
    return b.toString();
  }

  /** The values of one header as signed: each trimmed, inner runs of spaces made one, joined. */
  static String headerValue(List<String> values) {
    StringBuilder b = new StringBuilder();
    for (String v : values) {
      if (b.length() > 0) {
        b.append(',');
      }
      b.append(v.strip().replaceAll(" {2,}", " "));
    }
    return b.toString();
  }

  private static List<String[]> pairs(String rawQuery) {
    List<String[]> out = new ArrayList<>();
    for (String part : rawQuery.split("&")) {
      if (part.isEmpty()) {
        continue;
      }
      int eq = part.indexOf('=');
      String name = eq < 0 ? part : part.substring(0, eq);
      String value = eq < 0 ? "" : part.substring(eq + 1);
      out.add(new String[] {PercentEncoding.decode(name), PercentEncoding.decode(value)});
    }
    return out;
  }
}
