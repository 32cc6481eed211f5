package dev.kvcache.server.s3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.Base64;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.ChecksumAlgorithm;
import software.amazon.awssdk.services.s3.model.ChecksumMode;
import software.amazon.awssdk.services.s3.model.ChecksumType;
import software.amazon.awssdk.services.s3.model.ObjectLockLegalHoldStatus;
import software.amazon.awssdk.services.s3.model.ObjectLockMode;
import software.amazon.awssdk.services.s3.model.PutObjectResponse;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * The arguments of a PUT that S3 checks or refuses, checked and refused as S3 does, with nothing
 * stored: a {@code Content-MD5} (checked against the body), a website redirect (kept), object
 * locks (which a cache cannot keep), and the checksums a multipart upload names.
 */
class S3ArgumentsTest {

  @TempDir static Path dir;
  private static S3Fixture fixture;
  private static S3Client s3;

  @BeforeAll
  static void start() throws IOException {
    fixture = S3Fixture.start(dir, Map.of());
    s3 = fixture.s3;
  }

  @AfterAll
  static void stop() {
    fixture.close();
  }

  @Test
  void aContentMd5IsCheckedAndAWrongOneStoresNothing() throws Exception {
    contentMd5IsChecked(s3); // with the CRC32 the SDK sends by default, in a trailer
    try (S3Client md5Client = S3Client.builder().region(Region.US_EAST_1)
        .endpointOverride(fixture.endpoint()).forcePathStyle(true)
        .credentialsProvider(S3Fixture.credentials(S3Fixture.SECRET))
        .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED).build()) {
      contentMd5IsChecked(md5Client);
    }
  }

  private static void contentMd5IsChecked(S3Client s3) throws Exception {
    byte[] data = S3Fixture.random(100_000);
    String md5 = Base64.getEncoder().encodeToString(MessageDigest.getInstance("MD5")
        .digest(data));
    s3.putObject(b -> b.bucket("default").key("md5").contentMD5(md5), RequestBody.fromBytes(data));
    assertThat(s3.getObjectAsBytes(b -> b.bucket("default").key("md5")).asByteArray())
        .isEqualTo(data);

    byte[] other = data.clone();
    other[50_000] ^= 1;
    assertError("BadDigest", 400, () -> s3.putObject(b -> b.bucket("default").key("md5")
        .contentMD5(md5), RequestBody.fromBytes(other)));
    assertError("BadDigest", 400, () -> s3.putObject(b -> b.bucket("default").key("md5-new")
        .contentMD5(md5), RequestBody.fromBytes(other)));
    assertError("InvalidDigest", 400, () -> s3.putObject(b -> b.bucket("default").key("md5-new")
        .contentMD5("bm90IGFuIE1ENQ=="), RequestBody.fromBytes(other)));
    assertThat(s3.getObjectAsBytes(b -> b.bucket("default").key("md5")).asByteArray())
        .as("the object stored before is kept").isEqualTo(data);
    assertError("NoSuchKey", 404, () -> s3.getObjectAsBytes(b -> b.bucket("default")
        .key("md5-new")));
  }

  @Test
  void aWebsiteRedirectIsKeptAndOneOfAnotherSchemeRefused() {
    s3.putObject(b -> b.bucket("default").key("redirect").websiteRedirectLocation("/elsewhere"),
        RequestBody.fromString("x"));
    assertThat(s3.headObject(b -> b.bucket("default").key("redirect")).websiteRedirectLocation())
        .isEqualTo("/elsewhere");
    assertError("InvalidRedirectLocation", 400, () -> s3.putObject(b -> b.bucket("default")
        .key("redirect-ftp").websiteRedirectLocation("ftp://example.com"),
        RequestBody.fromString("x")));
    assertError("InvalidRedirectLocation", 400, () -> s3.createMultipartUpload(b -> b
        .bucket("default").key("redirect-ftp").websiteRedirectLocation("ftp://example.com")));
  }

  @Test
  void objectLocksAreRefusedAndTheirValuesCheckedFirst() {
    Instant later = Instant.now().plusSeconds(3600);
    assertError("InvalidRequest", 400, () -> s3.putObject(b -> b.bucket("default").key("locked")
        .objectLockMode(ObjectLockMode.GOVERNANCE).objectLockRetainUntilDate(later),
        RequestBody.fromString("x")));
    assertError("InvalidRequest", 400, () -> s3.createMultipartUpload(b -> b.bucket("default")
        .key("locked").objectLockLegalHoldStatus(ObjectLockLegalHoldStatus.ON)));
    assertError("InvalidArgument", 400, () -> s3.putObject(b -> b.bucket("default").key("locked")
        .objectLockMode("FOREVER").objectLockRetainUntilDate(later), RequestBody.fromString("x")));
    assertError("InvalidArgument", 400, () -> s3.putObject(b -> b.bucket("default").key("locked")
        .objectLockMode(ObjectLockMode.COMPLIANCE)
        .objectLockRetainUntilDate(Instant.now().minusSeconds(3600)),
        RequestBody.fromString("x")));
    assertError("NoSuchKey", 404, () -> s3.headObject(b -> b.bucket("default").key("locked")));
  }

  @Test
  void aPutAnswersWithTheChecksumItKeptAsTheWholeObjects() {
    PutObjectResponse put = s3.putObject(b -> b.bucket("default").key("typed")
        .checksumAlgorithm(ChecksumAlgorithm.SHA256), RequestBody.fromString("typed"));
    assertThat(put.checksumSHA256()).isNotNull();
    assertThat(put.checksumType()).isEqualTo(ChecksumType.FULL_OBJECT);
  }

  @Test
  void aSha512IsCheckedAndKeptAndAnUnknownChecksumRefused() throws Exception {
    byte[] data = S3Fixture.random(70_000);
    String sha512 = Base64.getEncoder().encodeToString(MessageDigest.getInstance("SHA-512")
        .digest(data));
    PutObjectResponse put = s3.putObject(b -> b.bucket("default").key("sha512")
        .overrideConfiguration(o -> o.putHeader("x-amz-checksum-sha512", sha512)),
        RequestBody.fromBytes(data));
    assertThat(put.sdkHttpResponse().firstMatchingHeader("x-amz-checksum-sha512")).contains(sha512);
    var got = s3.getObjectAsBytes(b -> b.bucket("default").key("sha512")
        .checksumMode(ChecksumMode.ENABLED));
    assertThat(got.asByteArray()).isEqualTo(data);
    assertThat(got.response().sdkHttpResponse().firstMatchingHeader("x-amz-checksum-sha512"))
        .contains(sha512);

    byte[] other = data.clone();
    other[0] ^= 1;
    assertError("BadDigest", 400, () -> s3.putObject(b -> b.bucket("default").key("sha512")
        .overrideConfiguration(o -> o.putHeader("x-amz-checksum-sha512", sha512)),
        RequestBody.fromBytes(other)));
    // a checksum the server does not know is refused: it could not check it
    assertError("InvalidRequest", 400, () -> s3.putObject(b -> b.bucket("default").key("sha512")
        .overrideConfiguration(o -> o.putHeader("x-amz-checksum-xxhash256", "AAAAAAAAAAA=")),
        RequestBody.fromBytes(other)));
    assertThat(s3.getObjectAsBytes(b -> b.bucket("default").key("sha512")).asByteArray())
        .as("the object stored first is kept").isEqualTo(data);
  }

  @Test
  void aMultipartUploadNamesAChecksumS3Knows() {
    assertError("InvalidRequest", 400, () -> s3.createMultipartUpload(b -> b.bucket("default")
        .key("mp").checksumAlgorithm("MD4")));
    assertError("InvalidRequest", 400, () -> s3.createMultipartUpload(b -> b.bucket("default")
        .key("mp").checksumType(ChecksumType.COMPOSITE)));
    assertError("InvalidRequest", 400, () -> s3.createMultipartUpload(b -> b.bucket("default")
        .key("mp").checksumAlgorithm(ChecksumAlgorithm.SHA1)
        .checksumType(ChecksumType.FULL_OBJECT)));
    assertThat(s3.createMultipartUpload(b -> b.bucket("default").key("mp")
        .checksumAlgorithm(ChecksumAlgorithm.CRC32).checksumType("composite")).uploadId())
        .isNotEmpty();
  }

  private static void assertError(String code, int status, Runnable request) {
    assertThatThrownBy(request::run).isInstanceOfSatisfying(S3Exception.class, e -> {
      assertThat(e.statusCode()).as(e.toString()).isEqualTo(status);
      if (e.awsErrorDetails().errorCode() != null) { // a HEAD's 404 has no body
        assertThat(e.awsErrorDetails().errorCode()).as(e.toString()).isEqualTo(code);
      }
    });
  }
}
