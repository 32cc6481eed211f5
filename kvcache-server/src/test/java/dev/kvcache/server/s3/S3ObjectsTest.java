package dev.kvcache.server.s3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.ResponseBytes;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.core.async.AsyncResponseTransformer;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.ChecksumAlgorithm;
import software.amazon.awssdk.services.s3.model.ChecksumMode;
import software.amazon.awssdk.services.s3.model.CompleteMultipartUploadResponse;
import software.amazon.awssdk.services.s3.model.CompletedPart;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.NoSuchUploadException;
import software.amazon.awssdk.services.s3.model.PutObjectResponse;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.UploadPartResponse;

/**
 * What an object keeps besides its bytes (its type and other headers, metadata, time and the
 * checksum its client sent), empty objects, conditional requests and multipart uploads, driven by the AWS SDK for
 * Java: its synchronous client part by part, and its asynchronous client's own multipart
 * transfers.
 */
class S3ObjectsTest {

  private static final int MIB = 1 << 20;

  @TempDir static Path dir;
  private static S3Fixture fixture;
  private static S3Client s3;

  @BeforeAll
  static void start() throws IOException {
    fixture = S3Fixture.start(dir, Map.of("kvcache.cache.max-block-bytes", "12MiB"));
    s3 = fixture.s3;
  }

  @AfterAll
  static void stop() {
    fixture.close();
  }

  @Test
  void anObjectKeepsItsTypeMetadataTimeAndChecksum() {
    byte[] data = S3Fixture.random(300_000);
    Instant before = Instant.now().minusSeconds(1);
    PutObjectResponse put = s3.putObject(b -> b.bucket("default").key("kept")
        .contentType("application/x-kv-block").metadata(Map.of("model", "llama", "layer", "3"))
        .contentDisposition("attachment; filename=kv.bin").cacheControl("no-cache")
        .checksumAlgorithm(ChecksumAlgorithm.CRC32_C), RequestBody.fromBytes(data));
    assertThat(put.checksumCRC32C()).isNotNull();

    HeadObjectResponse head = s3.headObject(b -> b.bucket("default").key("kept"));
    assertThat(head.contentLength()).isEqualTo(data.length);
    assertThat(head.contentType()).isEqualTo("application/x-kv-block");
    assertThat(head.metadata()).isEqualTo(Map.of("model", "llama", "layer", "3"));
    assertThat(head.lastModified()).isBetween(before, Instant.now().plusSeconds(1));
    assertThat(head.eTag()).isEqualTo(put.eTag());
    assertThat(head.contentDisposition()).isEqualTo("attachment; filename=kv.bin");
    assertThat(head.cacheControl()).isEqualTo("no-cache");
    assertThat(head.contentEncoding()).as("aws-chunked is the body's framing, not kept").isNull();
    // a GET may replace a header in its answer (as presigned URLs do)
    assertThat(s3.getObjectAsBytes(b -> b.bucket("default").key("kept")
        .responseContentType("text/plain")).response().contentType()).isEqualTo("text/plain");

    // the checksum the client sent, with the whole object: the SDK checks the bytes against it
    ResponseBytes<GetObjectResponse> whole = s3.getObjectAsBytes(b -> b.bucket("default")
        .key("kept").checksumMode(ChecksumMode.ENABLED));
    assertThat(whole.asByteArray()).isEqualTo(data);
    assertThat(whole.response().checksumCRC32C()).isEqualTo(put.checksumCRC32C());
    // and not with a range, whose bytes it would not match
    ResponseBytes<GetObjectResponse> part = s3.getObjectAsBytes(b -> b.bucket("default")
        .key("kept").range("bytes=10-99").checksumMode(ChecksumMode.ENABLED));
    assertThat(part.asByteArray()).isEqualTo(Arrays.copyOfRange(data, 10, 100));
    assertThat(part.response().checksumCRC32C()).isNull();
  }

  @Test
  void anEmptyObjectIsStoredAndRead() {
    PutObjectResponse put = s3.putObject(b -> b.bucket("default").key("empty"),
        RequestBody.empty());
    ResponseBytes<GetObjectResponse> got = s3.getObjectAsBytes(b -> b.bucket("default")
        .key("empty"));
    assertThat(got.asByteArray()).isEmpty();
    assertThat(got.response().eTag()).isEqualTo(put.eTag());
    assertThat(s3.headObject(b -> b.bucket("default").key("empty")).contentLength()).isZero();
    assertThatThrownBy(() -> s3.getObjectAsBytes(b -> b.bucket("default").key("empty")
        .range("bytes=0-9"))).isInstanceOfSatisfying(S3Exception.class,
            e -> assertThat(e.statusCode()).isEqualTo(416));
  }

  @Test
  void conditionsOnPutsAndGetsAreKept() {
    String first = s3.putObject(b -> b.bucket("default").key("cond"),
        RequestBody.fromBytes(S3Fixture.random(1000))).eTag();
    assertStatus(412, () -> s3.putObject(b -> b.bucket("default").key("cond").ifNoneMatch("*"),
        RequestBody.fromBytes(S3Fixture.random(1001))));
    assertStatus(412, () -> s3.putObject(b -> b.bucket("default").key("cond")
        .ifMatch("\"0000000003e8\""), RequestBody.fromBytes(S3Fixture.random(1001))));
    assertThat(s3.getObjectAsBytes(b -> b.bucket("default").key("cond")).asByteArray())
        .as("refused puts leave the object").isEqualTo(S3Fixture.random(1000));
    String second = s3.putObject(b -> b.bucket("default").key("cond").ifMatch(first),
        RequestBody.fromBytes(S3Fixture.random(1002))).eTag();
    assertThat(second).isNotEqualTo(first);
    s3.putObject(b -> b.bucket("default").key("cond-new").ifNoneMatch("*"),
        RequestBody.fromBytes(S3Fixture.random(10)));

    assertStatus(304, () -> s3.getObjectAsBytes(b -> b.bucket("default").key("cond")
        .ifNoneMatch(second)));
    assertStatus(412, () -> s3.getObjectAsBytes(b -> b.bucket("default").key("cond")
        .ifMatch(first)));
    assertStatus(304, () -> s3.getObjectAsBytes(b -> b.bucket("default").key("cond")
        .ifModifiedSince(Instant.now().plus(Duration.ofMinutes(1)))));
    assertStatus(412, () -> s3.getObjectAsBytes(b -> b.bucket("default").key("cond")
        .ifUnmodifiedSince(Instant.now().minus(Duration.ofMinutes(1)))));
    assertThat(s3.getObjectAsBytes(b -> b.bucket("default").key("cond").ifMatch(second)
        .ifModifiedSince(Instant.now().minus(Duration.ofMinutes(1)))).asByteArray())
        .isEqualTo(S3Fixture.random(1002));
  }

  @Test
  void aMultipartUploadIsCompletedIntoOneObject() {
    byte[] one = S3Fixture.random(5 * MIB);
    byte[] two = S3Fixture.random(MIB + 3);
    String id = s3.createMultipartUpload(b -> b.bucket("default").key("mp")
        .contentType("application/x-kv-chunk")).uploadId();
    // parts in any order, and a part sent again replaces the first
    String etag2 = upload(id, "mp", 2, S3Fixture.random(MIB)).eTag();
    etag2 = upload(id, "mp", 2, two).eTag();
    String etag1 = upload(id, "mp", 1, one).eTag();
    String etag1Final = etag1;
    String etag2Final = etag2;

    assertError("InvalidPart", () -> complete(id, "mp", List.of(part(1, etag1Final),
        part(2, "\"00000000100000\""))));
    assertError("InvalidPartOrder", () -> complete(id, "mp", List.of(part(2, etag2Final),
        part(1, etag1Final))));
    CompleteMultipartUploadResponse done = complete(id, "mp",
        List.of(part(1, etag1Final), part(2, etag2Final)));

    byte[] whole = concat(one, two);
    ResponseBytes<GetObjectResponse> got = s3.getObjectAsBytes(b -> b.bucket("default")
        .key("mp"));
    assertThat(got.asByteArray()).isEqualTo(whole);
    assertThat(got.response().eTag()).isEqualTo(done.eTag());
    assertThat(got.response().contentType()).isEqualTo("application/x-kv-chunk");
    assertThat(s3.getObjectAsBytes(b -> b.bucket("default").key("mp").partNumber(1))
        .asByteArray()).isEqualTo(whole);
    assertStatus(416, () -> s3.getObjectAsBytes(b -> b.bucket("default").key("mp")
        .partNumber(2)));
    // a completed upload takes no more parts
    assertThatThrownBy(() -> upload(id, "mp", 3, two)).isInstanceOf(NoSuchUploadException.class);
  }

  @Test
  void uploadsThatBreakTheRulesAreRefusedAndAnAbortedOneIsGone() {
    String id = s3.createMultipartUpload(b -> b.bucket("default").key("rules")).uploadId();
    String small = upload(id, "rules", 1, S3Fixture.random(MIB)).eTag();
    String last = upload(id, "rules", 2, S3Fixture.random(10)).eTag();
    assertError("EntityTooSmall", () -> complete(id, "rules",
        List.of(part(1, small), part(2, last))));
    // parts larger together than the largest block (12 MiB here)
    String a = upload(id, "rules", 1, S3Fixture.random(5 * MIB)).eTag();
    String b = upload(id, "rules", 2, S3Fixture.random(5 * MIB + 1)).eTag();
    String c = upload(id, "rules", 3, S3Fixture.random(3 * MIB)).eTag();
    assertError("EntityTooLarge", () -> complete(id, "rules",
        List.of(part(1, a), part(2, b), part(3, c))));
    assertStatus(404, () -> s3.headObject(r -> r.bucket("default").key("rules")));

    s3.abortMultipartUpload(r -> r.bucket("default").key("rules").uploadId(id));
    assertThatThrownBy(() -> complete(id, "rules", List.of(part(1, a), part(2, b))))
        .isInstanceOf(NoSuchUploadException.class);
    assertThatThrownBy(() -> s3.abortMultipartUpload(r -> r.bucket("default").key("rules")
        .uploadId(id))).isInstanceOf(NoSuchUploadException.class);
  }

  @Test
  void theAsynchronousClientsMultipartTransfersRoundTrip() throws Exception {
    byte[] data = S3Fixture.random(11 * MIB + 12_345);
    try (S3AsyncClient async = S3AsyncClient.builder().region(Region.US_EAST_1)
        .endpointOverride(fixture.endpoint()).forcePathStyle(true)
        .credentialsProvider(S3Fixture.credentials(S3Fixture.SECRET))
        .multipartEnabled(true)
        .multipartConfiguration(c -> c.thresholdInBytes(5L * MIB)
            .minimumPartSizeInBytes(5L * MIB))
        .build()) {
      async.putObject(b -> b.bucket("default").key("sdk-multipart"),
          AsyncRequestBody.fromBytes(data)).get();
      assertThat(async.getObject(b -> b.bucket("default").key("sdk-multipart"),
          AsyncResponseTransformer.toBytes()).get().asByteArray()).isEqualTo(data);
    }
  }

  private static UploadPartResponse upload(String id, String key, int number, byte[] bytes) {
    return s3.uploadPart(b -> b.bucket("default").key(key).uploadId(id).partNumber(number),
        RequestBody.fromBytes(bytes));
  }

  private static CompleteMultipartUploadResponse complete(String id, String key,
      List<CompletedPart> parts) {
    return s3.completeMultipartUpload(b -> b.bucket("default").key(key).uploadId(id)
        .multipartUpload(m -> m.parts(new ArrayList<>(parts))));
  }

  private static CompletedPart part(int number, String etag) {
    return CompletedPart.builder().partNumber(number).eTag(etag).build();
  }

  private static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] p : parts) {
      out.writeBytes(p);
    }
    return out.toByteArray();
  }

  private static void assertStatus(int status, Runnable request) {
    assertThatThrownBy(request::run).isInstanceOfSatisfying(S3Exception.class,
        e -> assertThat(e.statusCode()).as(e.toString()).isEqualTo(status));
  }

  private static void assertError(String code, Runnable request) {
    assertThatThrownBy(request::run).isInstanceOfSatisfying(S3Exception.class,
        e -> assertThat(e.awsErrorDetails().errorCode()).as(e.toString()).isEqualTo(code));
  }
}
