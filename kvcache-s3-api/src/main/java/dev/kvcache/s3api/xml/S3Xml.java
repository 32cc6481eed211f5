package dev.kvcache.s3api.xml;

import dev.kvcache.s3api.S3Error;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;

/** The XML bodies of S3's answers, as its API reference gives them. */
public final class S3Xml {

  private S3Xml() {}

  /** An object in a listing. */
  public record ListedObject(String key, Instant lastModified, String etag, long size) {}

  /** A bucket in a listing of buckets. */
  public record ListedBucket(String name, Instant created) {}

  /** A key DeleteObjects could not delete, and why. */
  public record DeleteError(String key, S3Error error, String message) {}

  /** An error: its code, message, the resource it concerns and the request's id. */
  public static String error(S3Error error, String message, String resource, String requestId) {
    return new Xml().open("Error", false).element("Code", error.code())
        .element("Message", message).element("Resource", resource)
        .element("RequestId", requestId).close("Error").toString();
  }

  /** ListAllMyBucketsResult. */
  public static String buckets(String owner, List<ListedBucket> buckets) {
    Xml x = new Xml().open("ListAllMyBucketsResult", true)
        .open("Owner", false).element("ID", owner).element("DisplayName", owner).close("Owner")
        .open("Buckets", false);
    for (ListedBucket b : buckets) {
      x.open("Bucket", false).element("Name", b.name()).element("CreationDate", time(b.created()))
          .close("Bucket");
    }
    return x.close("Buckets").close("ListAllMyBucketsResult").toString();
  }

  /**
   * ListBucketResult of ListObjectsV2.
   *
   * @param next the continuation token of the next page; null on the last
   * @param encodingType {@code url} if the keys and prefixes given are percent-encoded; null if
   *     not
   */
  public static String listObjectsV2(String bucket, String prefix, String delimiter,
      int maxKeys, String startAfter, String continuationToken, String next,
      List<ListedObject> objects, List<String> commonPrefixes, String encodingType) {
    Xml x = new Xml().open("ListBucketResult", true).element("Name", bucket)
        .element("Prefix", prefix == null ? "" : prefix).element("Delimiter", delimiter)
        .element("EncodingType", encodingType)
        .element("MaxKeys", maxKeys).element("KeyCount", objects.size() + commonPrefixes.size())
        .element("IsTruncated", next != null).element("StartAfter", startAfter)
        .element("ContinuationToken", continuationToken).element("NextContinuationToken", next);
    return contents(x, objects, commonPrefixes).close("ListBucketResult").toString();
  }

  /**
   * ListBucketResult of ListObjects (version 1).
   *
   * @param nextMarker the last key or common prefix listed on a truncated page; null on the last
   * @param encodingType {@code url} if the keys and prefixes given are percent-encoded; null if
   *     not
   */
  public static String listObjects(String bucket, String prefix, String delimiter, int maxKeys,
      String marker, String nextMarker, boolean truncated, List<ListedObject> objects,
      List<String> commonPrefixes, String encodingType) {
    Xml x = new Xml().open("ListBucketResult", true).element("Name", bucket)
        .element("Prefix", prefix == null ? "" : prefix)
        .element("Marker", marker == null ? "" : marker).element("NextMarker", nextMarker)
        .element("MaxKeys", maxKeys).element("Delimiter", delimiter)
        .element("EncodingType", encodingType).element("IsTruncated", truncated);
    return contents(x, objects, commonPrefixes).close("ListBucketResult").toString();
  }

  private static Xml contents(Xml x, List<ListedObject> objects, List<String> commonPrefixes) {
    for (ListedObject o : objects) {
      x.open("Contents", false).element("Key", o.key())
          .element("LastModified", time(o.lastModified())).element("ETag", o.etag())
          .element("Size", o.size()).element("StorageClass", "STANDARD").close("Contents");
    }
    for (String p : commonPrefixes) {
      x.open("CommonPrefixes", false).element("Prefix", p).close("CommonPrefixes");
    }
    return x;
  }

  /** InitiateMultipartUploadResult. */
  public static String multipartUploadCreated(String bucket, String key, String uploadId) {
    return new Xml().open("InitiateMultipartUploadResult", true).element("Bucket", bucket)
        .element("Key", key).element("UploadId", uploadId)
        .close("InitiateMultipartUploadResult").toString();
  }

  /** CompleteMultipartUploadResult. */
  public static String multipartUploadCompleted(String location, String bucket, String key,
      String etag) {
    return new Xml().open("CompleteMultipartUploadResult", true).element("Location", location)
        .element("Bucket", bucket).element("Key", key).element("ETag", etag)
        .close("CompleteMultipartUploadResult").toString();
  }

  /** DeleteResult: the keys deleted (left out when {@code quiet}) and those that failed. */
  public static String deleted(List<String> deleted, List<DeleteError> errors, boolean quiet) {
    Xml x = new Xml().open("DeleteResult", true);
    if (!quiet) {
      for (String k : deleted) {
        x.open("Deleted", false).element("Key", k).close("Deleted");
      }
    }
    for (DeleteError e : errors) {
      x.open("Error", false).element("Key", e.key()).element("Code", e.error().code())
          .element("Message", e.message()).close("Error");
    }
    return x.close("DeleteResult").toString();
  }

  /** An instant as S3's XML gives it: ISO 8601 in UTC, to the millisecond. */
  static String time(Instant t) {
    return TIME.format(t);
  }

  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);
}
