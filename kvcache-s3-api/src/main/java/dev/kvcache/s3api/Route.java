package dev.kvcache.s3api;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * What a request asks: its {@link Operation}, on which bucket and object key. The bucket comes
 * from the host name under one of the base domains (virtual-host addressing: {@code
 * bucket.s3.example:9000}), else from the path's first segment (path-style: {@code
 * /bucket/key}); the key is the rest of the path, percent-decoded.
 *
 * @param operation what is asked
 * @param bucket the bucket; null for {@link Operation#LIST_BUCKETS}
 * @param key the object's key; null for operations on a bucket
 * @param query the query's parameters, decoded
 */
public record Route(Operation operation, String bucket, String key, Map<String, String> query) {

  /** The longest object key S3 allows, in UTF-8 bytes. */
  public static final int MAX_KEY_BYTES = 1024;

  private static final Set<String> UNSUPPORTED = Set.of("acl", "tagging", "versioning", "versions",
      "policy", "cors", "lifecycle", "website", "replication", "encryption", "logging",
      "notification", "object-lock", "retention", "legal-hold", "restore", "select",
      "torrent", "attributes", "accelerate", "analytics", "inventory", "metrics",
      "ownershipControls", "publicAccessBlock", "requestPayment", "intelligent-tiering", "location");

  public Route {
    Objects.requireNonNull(operation, "operation");
    query = Map.copyOf(query);
  }

  /**
   * The route of a request.
   *
   * @param method the HTTP method
   * @param host the {@code Host} header, with its port if sent; may be null
   * @param rawPath the path as sent, percent-encoded
   * @param query the query's parameters, decoded
   * @param baseDomains the host names under which a first label names the bucket
   * @throws S3Exception {@code InvalidRequest} for what the API does not answer, naming it
   */
  public static Route of(String method, String host, String rawPath, Map<String, String> query,
      Set<String> baseDomains) throws S3Exception {
    String bucket = bucketOfHost(host, baseDomains);
    String path = PercentEncoding.decode(rawPath);
    if (path.startsWith("/")) {
      path = path.substring(1);
    }
    String key;
    if (bucket == null) {
      int slash = path.indexOf('/');
      bucket = slash < 0 ? path : path.substring(0, slash);
      key = slash < 0 ? "" : path.substring(slash + 1);
    } else {
      key = path;
    }
    for (String q : query.keySet()) {
      if (UNSUPPORTED.contains(q)) {
        throw new S3Exception(S3Error.NOT_IMPLEMENTED, "the ?" + q + " sub-resource is not "
            + "supported: this S3 API stores, reads, lists and deletes objects");
      }
    }
    for (int i = 0; i < key.length(); i++) {
      char c = key.charAt(i);
      if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0xfffe || c == 0xffff) {
        throw new S3Exception(S3Error.INVALID_ARGUMENT, "object keys here hold no control "
            + "characters (U+" + String.format("%04X", (int) c) + " at " + i + "): XML, in which "
            + "listings answer, cannot carry them");
      }
    }
    if (key.getBytes(StandardCharsets.UTF_8).length > MAX_KEY_BYTES) {
      throw new S3Exception(S3Error.KEY_TOO_LONG, "object keys are at most " + MAX_KEY_BYTES
          + " bytes");
    }
    if (bucket.isEmpty()) {
      if (method.equals("GET")) {
        return new Route(Operation.LIST_BUCKETS, null, null, query);
      }
      throw new S3Exception(S3Error.METHOD_NOT_ALLOWED, method + " needs a bucket");
    }
    Operation op = key.isEmpty() ? bucketOperation(method, query) : objectOperation(method, query);
    return new Route(op, bucket, key.isEmpty() ? null : key, query);
  }

  private static Operation bucketOperation(String method, Map<String, String> query)
      throws S3Exception {
    return switch (method) {
      case "GET" -> {
        String listType = query.get("list-type");
        if (listType == null) {
          yield Operation.LIST_OBJECTS;
        }
        if (!listType.equals("2")) {
          throw new S3Exception(S3Error.INVALID_ARGUMENT, "list-type is 2 (ListObjectsV2) or "
              + "absent (ListObjects), not " + listType);
        }
        yield Operation.LIST_OBJECTS_V2;
      }
      case "HEAD" -> Operation.HEAD_BUCKET;
      case "PUT" -> Operation.CREATE_BUCKET;
      case "DELETE" -> Operation.DELETE_BUCKET;
      case "POST" -> {
        if (!query.containsKey("delete")) {
          throw new S3Exception(S3Error.NOT_IMPLEMENTED, "POST on a bucket is DeleteObjects "
              + "(?delete) only");
        }
        yield Operation.DELETE_OBJECTS;
      }
      default -> throw new S3Exception(S3Error.METHOD_NOT_ALLOWED,
          method + " on a bucket is not supported");
    };
  }

  private static Operation objectOperation(String method, Map<String, String> query)
      throws S3Exception {
    boolean upload = query.containsKey("uploadId");
    return switch (method) {
      case "PUT" -> {
        if (query.containsKey("x-id") && "CopyObject".equals(query.get("x-id"))) {
          throw new S3Exception(S3Error.NOT_IMPLEMENTED, "CopyObject is not supported");
        }
        yield upload ? Operation.UPLOAD_PART : Operation.PUT_OBJECT;
      }
      case "GET" -> upload ? unsupported("ListParts") : Operation.GET_OBJECT;
      case "HEAD" -> Operation.HEAD_OBJECT;
      case "DELETE" -> upload ? Operation.ABORT_MULTIPART_UPLOAD : Operation.DELETE_OBJECT;
      case "POST" -> {
        if (query.containsKey("uploads")) {
          yield Operation.CREATE_MULTIPART_UPLOAD;
        }
        if (upload) {
          yield Operation.COMPLETE_MULTIPART_UPLOAD;
        }
        throw new S3Exception(S3Error.NOT_IMPLEMENTED, "POST on an object is "
            + "CreateMultipartUpload (?uploads) or CompleteMultipartUpload (?uploadId) only");
      }
      default -> throw new S3Exception(S3Error.METHOD_NOT_ALLOWED,
          method + " on an object is not supported");
    };
  }

  private static Operation unsupported(String name) throws S3Exception {
    throw new S3Exception(S3Error.NOT_IMPLEMENTED, name + " is not supported");
  }

  /** The bucket a host name under one of {@code baseDomains} names; null if none does. */
  private static String bucketOfHost(String host, Set<String> baseDomains) {
    if (host == null || baseDomains.isEmpty()) {
      return null;
    }
    String name = host;
    if (name.startsWith("[")) {
      return null; // an IPv6 literal names no bucket
    }
    int colon = name.lastIndexOf(':');
    if (colon >= 0) {
      name = name.substring(0, colon);
    }
    name = name.toLowerCase(java.util.Locale.ROOT);
    for (String base : baseDomains) {
      String suffix = "." + base.toLowerCase(java.util.Locale.ROOT);
      if (name.endsWith(suffix) && name.length() > suffix.length()) {
        return name.substring(0, name.length() - suffix.length());
      }
    }
    return null;
  }
}
