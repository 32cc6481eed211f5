package dev.kvcache.server.s3;

import dev.kvcache.s3api.PercentEncoding;
import dev.kvcache.s3api.S3Error;
import dev.kvcache.s3api.S3Exception;
import dev.kvcache.s3api.xml.S3Xml;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;

/**
 * ListObjectsV2 over a bucket's names ({@link ObjectNames}): in key order, from after {@code
 * start-after} or the continuation token, those under {@code prefix}, with the keys that share a
 * part up to a {@code delimiter} rolled up into one common prefix each, {@code max-keys} (at most
 * 1000) of them and common prefixes together; {@code encoding-type=url} percent-encodes the keys
 * and prefixes in the answer. A continuation token is the last key or common prefix listed, in
 * base64, so that a listing goes on past it even if it was deleted meanwhile.
 */
final class ObjectListing {

  /** The most keys and common prefixes on one page, as S3 gives. */
  static final int MAX_KEYS = 1000;

  private ObjectListing() {}

  /** The answer's XML for {@code query}, a ListObjectsV2's parameters, over {@code names}. */
  static String list(String bucket, NavigableMap<String, ObjectNames.Listed> names,
      Map<String, String> query) throws S3Exception {
    String prefix = query.getOrDefault("prefix", "");
    String delimiter = emptyToNull(query.get("delimiter"));
    String startAfter = emptyToNull(query.get("start-after"));
    String token = emptyToNull(query.get("continuation-token"));
    int maxKeys = maxKeys(query.get("max-keys"));
    boolean url = "url".equals(query.get("encoding-type"));
    if (query.containsKey("encoding-type") && !url) {
      throw new S3Exception(S3Error.INVALID_ARGUMENT, "encoding-type is url or absent, not "
          + query.get("encoding-type"));
    }
    String after = token != null ? decodeToken(token) : startAfter;
    if (startAfter != null && after.compareTo(startAfter) < 0) {
      after = startAfter;
    }
    NavigableMap<String, ObjectNames.Listed> from = after == null || after.compareTo(prefix) < 0
        ? names.tailMap(prefix, true) : names.tailMap(after, false);

    List<S3Xml.ListedObject> objects = new ArrayList<>();
    List<String> prefixes = new ArrayList<>();
    String last = null;
    String next = null;
    String key = from.isEmpty() ? null : from.firstKey();
    while (maxKeys > 0 && key != null && key.startsWith(prefix)) {
      if (objects.size() + prefixes.size() == maxKeys) {
        next = encodeToken(last);
        break;
      }
      int cut = delimiter == null ? -1 : key.indexOf(delimiter, prefix.length());
      if (cut >= 0) {
        String common = key.substring(0, cut + delimiter.length());
        prefixes.add(common);
        last = common;
        String beyond = successor(common);
        key = beyond == null ? null : names.ceilingKey(beyond);
      } else {
        ObjectNames.Listed o = names.get(key);
        if (o != null) {
          objects.add(new S3Xml.ListedObject(key, o.lastModified(), o.etag(), o.length()));
          last = key;
        }
        key = names.higherKey(key);
      }
    }
    return S3Xml.listObjectsV2(bucket, encoded(prefix, url), encoded(delimiter, url), maxKeys,
        encoded(startAfter, url), token, next,
        url ? objects.stream().map(o -> new S3Xml.ListedObject(encoded(o.key(), true),
            o.lastModified(), o.etag(), o.size())).toList() : objects,
        url ? prefixes.stream().map(p -> encoded(p, true)).toList() : prefixes,
        url ? "url" : null);
  }

  /** The least string after every string that starts with {@code p}; null if there is none. */
  static String successor(String p) {
    StringBuilder b = new StringBuilder(p);
    while (b.length() > 0) {
      char c = b.charAt(b.length() - 1);
      if (c != Character.MAX_VALUE) {
        b.setCharAt(b.length() - 1, (char) (c + 1));
        return b.toString();
      }
      b.setLength(b.length() - 1);
    }
    return null;
  }

  private static int maxKeys(String text) throws S3Exception {
    if (text == null) {
      return MAX_KEYS;
    }
    try {
      int n = Integer.parseInt(text.strip());
      if (n >= 0) {
        return Math.min(n, MAX_KEYS);
      }
    } catch (NumberFormatException e) {
      // refused below
    }
    throw new S3Exception(S3Error.INVALID_ARGUMENT, "max-keys must be a count, not " + text);
  }

  private static String encodeToken(String last) {
    return Base64.getUrlEncoder().withoutPadding()
        .encodeToString(last.getBytes(StandardCharsets.UTF_8));
  }

  private static String decodeToken(String token) throws S3Exception {
    try {
      return new String(Base64.getUrlDecoder().decode(token), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      throw new S3Exception(S3Error.INVALID_ARGUMENT, "the continuation token " + token
          + " is not one this server gave");
    }
  }

  private static String encoded(String s, boolean url) {
    return s == null || !url ? s : PercentEncoding.encode(s, true);
  }

  private static String emptyToNull(String s) {
    return s == null || s.isEmpty() ? null : s;
  }
}
