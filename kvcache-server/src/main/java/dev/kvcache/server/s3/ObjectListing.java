package dev.kvcache.server.s3;

import dev.kvcache.s3api.PercentEncoding;
import dev.kvcache.s3api.S3Error;
import dev.kvcache.s3api.S3Exception;
import dev.kvcache.s3api.xml.S3Xml;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;

/**
 * ListObjectsV2 (and ListObjects, version 1) over a bucket's names ({@link ObjectNames}): in key order, from after {@code
 * start-after} or the continuation token, those under {@code prefix}, with the keys that share a
 * part up to a {@code delimiter} rolled up into one common prefix each, {@code max-keys} (at most
 * 1000) of them and common prefixes together; {@code encoding-type=url} percent-encodes the keys
 * and prefixes in the answer. A continuation token is the last key or common prefix listed, marked
 * as which, in base64, so that a listing goes on past it even if it was deleted meanwhile, and past
 * every key under a common prefix.
 */
final class ObjectListing {

  /** The most keys and common prefixes on one page, as S3 gives. */
  static final int MAX_KEYS = 1000;

  private ObjectListing() {}

  /** The answer's XML for {@code query}, a ListObjectsV2's parameters, over {@code names}. */
  static String list(String bucket, NavigableMap<String, ObjectNames.Listed> names,
      Map<String, String> query) throws S3Exception {
    Arguments a = Arguments.of(query);
    String startAfter = emptyToNull(query.get("start-after"));
    String token = emptyToNull(query.get("continuation-token"));
    // where the listing starts: at its prefix, after start-after, and after the token's key or
    // past every key under the token's common prefix, whichever is last
    String from = a.prefix;
    boolean inclusive = true;
    if (startAfter != null && startAfter.compareTo(from) >= 0) {
      from = startAfter;
      inclusive = false;
    }
    if (token != null) {
      String last = decodeToken(token);
      String key = last.substring(1);
      String bound = last.startsWith(COMMON) ? successor(key) : key;
      if (bound == null) {
        names = Collections.emptyNavigableMap(); // nothing sorts past that prefix
      } else if (bound.compareTo(from) > 0 || bound.equals(from) && inclusive
          && !last.startsWith(COMMON)) {
        from = bound;
        inclusive = last.startsWith(COMMON);
      }
    }
    Page page = page(names, a, from, inclusive);
    return S3Xml.listObjectsV2(bucket, a.encoded(a.asked), a.encoded(a.delimiter), a.maxKeys,
        a.encoded(startAfter), token, page.truncated ? encodeToken(page.last) : null,
        a.encoded(page.objects), a.encodedPrefixes(page.prefixes), a.url ? "url" : null);
  }

  /**
   * The answer's XML for {@code query}, a ListObjects' (version 1) parameters, over {@code
   * names}: as ListObjectsV2 with its {@code marker} for {@code start-after}; a truncated page
   * gives its last key or common prefix as {@code NextMarker} (S3 gives it only with a delimiter,
   * and clients go on from the last key without one: the same key).
   */
  static String listVersion1(String bucket, NavigableMap<String, ObjectNames.Listed> names,
      Map<String, String> query) throws S3Exception {
    Arguments a = Arguments.of(query);
    String marker = emptyToNull(query.get("marker"));
    boolean after = marker != null && marker.compareTo(a.prefix) >= 0;
    Page page = page(names, a, after ? marker : a.prefix, !after);
    String nextMarker = page.truncated ? page.last.substring(1) : null;
    return S3Xml.listObjects(bucket, a.encoded(a.asked), a.encoded(a.delimiter), a.maxKeys,
        a.encoded(marker), a.encoded(nextMarker), page.truncated, a.encoded(page.objects),
        a.encodedPrefixes(page.prefixes), a.url ? "url" : null);
  }

  /** The parameters both versions take. */
  private record Arguments(String asked, String prefix, String delimiter, int maxKeys,
      boolean url) {

    static Arguments of(Map<String, String> query) throws S3Exception {
      String asked = query.get("prefix");
      boolean url = "url".equals(query.get("encoding-type"));
      if (query.containsKey("encoding-type") && !url) {
        throw new S3Exception(S3Error.INVALID_ARGUMENT, "encoding-type is url or absent, not "
            + query.get("encoding-type"));
      }
      int maxKeys = ObjectListing.maxKeys(query.get("max-keys"));
      return new Arguments(asked, asked == null ? "" : asked,
          emptyToNull(query.get("delimiter")), maxKeys, url);
    }

    String encoded(String s) {
      return s == null || !url ? s : PercentEncoding.encode(s, true);
    }

    List<S3Xml.ListedObject> encoded(List<S3Xml.ListedObject> objects) {
      return url ? objects.stream().map(o -> new S3Xml.ListedObject(encoded(o.key()),
          o.lastModified(), o.etag(), o.size())).toList() : objects;
    }

    List<String> encodedPrefixes(List<String> prefixes) {
      return url ? prefixes.stream().map(this::encoded).toList() : prefixes;
    }
  }

  /**
   * A page: its keys and common prefixes, the last of them marked as which, and whether more
   * follow.
   */
  private record Page(List<S3Xml.ListedObject> objects, List<String> prefixes, String last,
      boolean truncated) {}

  /**
   * The page of {@code names} under the arguments' prefix from {@code from} (itself included if
   * {@code inclusive}); a common prefix not after {@code from} when it is excluded is not listed.
   */
  private static Page page(NavigableMap<String, ObjectNames.Listed> names, Arguments a,
      String from, boolean inclusive) {
    NavigableMap<String, ObjectNames.Listed> tail = names.tailMap(from, inclusive);
    List<S3Xml.ListedObject> objects = new ArrayList<>();
    List<String> prefixes = new ArrayList<>();
    String last = null;
    String key = tail.isEmpty() ? null : tail.firstKey();
    while (a.maxKeys > 0 && key != null && key.startsWith(a.prefix)) {
      if (objects.size() + prefixes.size() == a.maxKeys) {
        return new Page(objects, prefixes, last, true);
      }
      int cut = a.delimiter == null ? -1 : key.indexOf(a.delimiter, a.prefix.length());
      if (cut >= 0) {
        String common = key.substring(0, cut + a.delimiter.length());
        String beyond = successor(common);
        if (inclusive || common.compareTo(from) > 0) {
          prefixes.add(common);
          last = COMMON + common;
        } // else the prefix of keys after start-after (or the token) is not after it: not listed
        key = beyond == null ? null : names.ceilingKey(beyond);
      } else {
        ObjectNames.Listed o = names.get(key);
        if (o != null) {
          objects.add(new S3Xml.ListedObject(key, o.lastModified(), o.etag(), o.length()));
          last = KEY + key;
        }
        key = names.higherKey(key);
      }
    }
    return new Page(objects, prefixes, last, false);
  }

  /** A token's first character: the last entry listed was a key, or a common prefix. */
  private static final String KEY = "k";
  private static final String COMMON = "p";

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
      String last = new String(Base64.getUrlDecoder().decode(token), StandardCharsets.UTF_8);
      if (last.startsWith(KEY) || last.startsWith(COMMON)) {
        return last;
      }
    } catch (IllegalArgumentException e) {
      // refused below
    }
    throw new S3Exception(S3Error.INVALID_ARGUMENT, "the continuation token " + token
        + " is not one this server gave");
  }

  private static String emptyToNull(String s) {
    return s == null || s.isEmpty() ? null : s;
  }
}
