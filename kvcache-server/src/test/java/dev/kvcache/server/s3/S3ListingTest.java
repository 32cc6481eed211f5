package dev.kvcache.server.s3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.AccessDeniedException;
import software.amazon.awssdk.services.s3.model.CommonPrefix;
import software.amazon.awssdk.services.s3.model.ListObjectsResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * ListObjectsV2 as the AWS SDK for Java drives it: keys in order with their sizes and ETags,
 * prefixes, delimiters, pages, {@code start-after}, and ListObjects (version 1) by marker; an object leaves the listing when it is
 * deleted or evicted from every tier, and the listing of what the disk holds survives a restart.
 */
class S3ListingTest {

  private static final List<String> KEYS = List.of("a/1", "a/2", "a/b/3", "b/1", "c@x.bin");

  @TempDir Path dir;

  @Test
  void keysAreListedInOrderByPrefixDelimiterAndPage() throws Exception {
    try (S3Fixture f = S3Fixture.start(dir, Map.of())) {
      Map<String, String> etags = new HashMap<>();
      for (String k : KEYS) {
        etags.put(k, f.s3.putObject(b -> b.bucket("default").key(k),
            RequestBody.fromBytes(S3Fixture.random(100 + k.length()))).eTag());
      }
      ListObjectsV2Response all = f.s3.listObjectsV2(b -> b.bucket("default"));
      assertThat(all.contents()).extracting(S3Object::key).containsExactlyElementsOf(KEYS);
      assertThat(all.keyCount()).isEqualTo(KEYS.size());
      assertThat(all.isTruncated()).isFalse();
      for (S3Object o : all.contents()) {
        assertThat(o.eTag()).isEqualTo(etags.get(o.key()));
        assertThat(o.size()).isEqualTo(100 + o.key().length());
      }

      assertThat(keys(f.s3.listObjectsV2(b -> b.bucket("default").prefix("a/"))))
          .containsExactly("a/1", "a/2", "a/b/3");
      ListObjectsV2Response top = f.s3.listObjectsV2(b -> b.bucket("default").delimiter("/"));
      assertThat(keys(top)).containsExactly("c@x.bin");
      assertThat(top.commonPrefixes()).extracting(CommonPrefix::prefix)
          .containsExactly("a/", "b/");
      ListObjectsV2Response inA = f.s3.listObjectsV2(b -> b.bucket("default").prefix("a/")
          .delimiter("/"));
      assertThat(keys(inA)).containsExactly("a/1", "a/2");
      assertThat(inA.commonPrefixes()).extracting(CommonPrefix::prefix).containsExactly("a/b/");
      assertThat(keys(f.s3.listObjectsV2(b -> b.bucket("default").startAfter("a/2"))))
          .containsExactly("a/b/3", "b/1", "c@x.bin");

      List<String> paged = new ArrayList<>();
      int pages = 0;
      for (ListObjectsV2Response page : f.s3.listObjectsV2Paginator(b -> b.bucket("default")
          .maxKeys(2))) {
        assertThat(page.keyCount()).isLessThanOrEqualTo(2);
        paged.addAll(keys(page));
        pages++;
      }
      assertThat(paged).containsExactlyElementsOf(KEYS);
      assertThat(pages).isEqualTo(3);

      // ListObjects (version 1): a marker, and pages followed as clients follow them, from the
      // NextMarker a page with a delimiter gives, else from its last key
      assertThat(f.s3.listObjects(b -> b.bucket("default").marker("a/2")).contents())
          .extracting(S3Object::key).containsExactly("a/b/3", "b/1", "c@x.bin");
      assertThat(version1Pages(f, null, 2)).containsExactlyElementsOf(KEYS);
      assertThat(version1Pages(f, "/", 1)).containsExactly("a/", "b/", "c@x.bin");
      assertThatThrownBy(() -> f.s3.listObjectsV2(b -> b.bucket("other")))
          .as("a bucket the key may not read").isInstanceOf(AccessDeniedException.class);
    }
  }

  @Test
  void deletedAndEvictedObjectsLeaveTheListing() throws Exception {
    // RAM alone, 64 MiB: 48 objects of 2 MiB cannot all stay
    try (S3Fixture f = S3Fixture.start(null, Map.of())) {
      f.s3.putObject(b -> b.bucket("default").key("deleted"),
          RequestBody.fromBytes(S3Fixture.random(10)));
      f.s3.deleteObject(b -> b.bucket("default").key("deleted"));
      List<String> put = new ArrayList<>();
      for (int i = 0; i < 48; i++) {
        String k = String.format("evict/%02d", i);
        f.s3.putObject(b -> b.bucket("default").key(k),
            RequestBody.fromBytes(S3Fixture.random(2 << 20)));
        put.add(k);
      }
      List<String> listed = new ArrayList<>();
      for (ListObjectsV2Response page : f.s3.listObjectsV2Paginator(b -> b.bucket("default"))) {
        listed.addAll(keys(page));
      }
      assertThat(listed).doesNotContain("deleted").isNotEmpty().hasSizeLessThan(put.size());
      for (String k : put) {
        if (listed.contains(k)) {
          assertThat(f.s3.headObject(b -> b.bucket("default").key(k)).contentLength())
              .isEqualTo(2 << 20);
        } else {
          assertThatThrownBy(() -> f.s3.getObjectAsBytes(b -> b.bucket("default").key(k)))
              .as(k).isInstanceOf(NoSuchKeyException.class);
        }
      }
    }
  }

  @Test
  void theListingOfWhatTheDiskHoldsSurvivesARestart() throws Exception {
    try (S3Fixture f = S3Fixture.start(dir, Map.of())) {
      for (String k : KEYS) {
        f.s3.putObject(b -> b.bucket("default").key(k),
            RequestBody.fromBytes(S3Fixture.random(5000)));
      }
    }
    try (S3Fixture f = S3Fixture.start(dir, Map.of())) {
      S3Client s3 = f.s3;
      ListObjectsV2Response all = s3.listObjectsV2(b -> b.bucket("default"));
      assertThat(keys(all)).containsExactlyElementsOf(KEYS);
      assertThat(all.contents()).allSatisfy(o -> assertThat(o.size()).isEqualTo(5000));
      assertThat(s3.getObjectAsBytes(b -> b.bucket("default").key("a/b/3")).asByteArray())
          .isEqualTo(S3Fixture.random(5000));
    }
  }

  @Test
  void aBucketIsDeletedOnlyEmptyAndStaysAsTheServersNamespace() throws Exception {
    try (S3Fixture f = S3Fixture.start(null, Map.of())) {
      f.s3.putObject(b -> b.bucket("default").key("k"), RequestBody.fromBytes(new byte[10]));
      assertThatThrownBy(() -> f.s3.deleteBucket(b -> b.bucket("default")))
          .isInstanceOfSatisfying(software.amazon.awssdk.services.s3.model.S3Exception.class,
              e -> assertThat(e.awsErrorDetails().errorCode()).isEqualTo("BucketNotEmpty"));
      f.s3.deleteObject(b -> b.bucket("default").key("k"));
      f.s3.deleteBucket(b -> b.bucket("default"));
      f.s3.headBucket(b -> b.bucket("default"));
    }
  }

  /** The keys and common prefixes of every page of a ListObjects (version 1). */
  private static List<String> version1Pages(S3Fixture f, String delimiter, int maxKeys) {
    List<String> listed = new ArrayList<>();
    String marker = null;
    for (int pages = 0; pages < 10; pages++) {
      String from = marker;
      ListObjectsResponse page = f.s3.listObjects(b -> b.bucket("default").delimiter(delimiter)
          .maxKeys(maxKeys).marker(from));
      page.contents().forEach(o -> listed.add(o.key()));
      page.commonPrefixes().forEach(p -> listed.add(p.prefix()));
      if (!page.isTruncated()) {
        return listed;
      }
      marker = page.nextMarker() != null ? page.nextMarker()
          : page.contents().get(page.contents().size() - 1).key();
    }
    throw new AssertionError("more than 10 pages: " + listed);
  }

  private static List<String> keys(ListObjectsV2Response r) {
    return r.contents().stream().map(S3Object::key).toList();
  }
}
