package dev.kvcache.s3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.kvcache.s3.testkit.InProcessS3;
import dev.kvcache.s3.testkit.RcloneS3;
import dev.kvcache.spi.Crc32c;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.core.async.AsyncResponseTransformer;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;

/**
 * How each S3-compatible server the tests use treats what the object tier relies on, pinned so
 * that docs/object-tier.md's table of quirks stays true: whether a PUT's checksum is checked,
 * what a GET returns of it and of the metadata, and whether conditions are honoured.
 */
@Tag("integration")
class StoreQuirksTest {

  private static final byte[] BODY = new byte[1000];
  private static final String RIGHT = Crc32c.toBase64(Crc32c.of(ByteBuffer.wrap(BODY)));
  private static final String WRONG = Crc32c.toBase64(12345);

  private static InProcessS3 s3proxy;
  private static RcloneS3 rclone;

  @BeforeAll
  static void startStores() throws Exception {
    s3proxy = new InProcessS3();
    rclone = new RcloneS3();
  }

  @AfterAll
  static void stopStores() {
    s3proxy.close();
    rclone.close();
  }

  private static S3AsyncClient client(URI endpoint) {
    return S3AsyncClient.builder().endpointOverride(endpoint).region(Region.US_EAST_1)
        .forcePathStyle(true)
        .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
        .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
        .credentialsProvider(StaticCredentialsProvider.create(
            AwsBasicCredentials.create(InProcessS3.ACCESS_KEY, InProcessS3.SECRET_KEY)))
        .build();
  }

  private record Behaviour(boolean checksPutChecksum, boolean metadataKeysAsWritten,
      boolean honoursIfMatchOnDelete, boolean honoursIfNoneMatchOnPut) {}

  private static Behaviour probe(URI endpoint) {
    try (S3AsyncClient c = client(endpoint)) {
      String bucket = InProcessS3.BUCKET;
      Throwable wrong = catchThrowable(() -> c.putObject(b -> b.bucket(bucket).key("q/wrong")
          .checksumCRC32C(WRONG).contentLength((long) BODY.length),
          AsyncRequestBody.fromBytes(BODY)).join());
      c.putObject(b -> b.bucket(bucket).key("q/right").checksumCRC32C(RIGHT)
              .contentLength((long) BODY.length).metadata(Map.of("kvcache-crc32c", "0a0b0c0d")),
          AsyncRequestBody.fromBytes(BODY)).join();
      GetObjectResponse got = c.getObject(b -> b.bucket(bucket).key("q/right")
              .overrideConfiguration(o -> o.putHeader("x-amz-checksum-mode", "ENABLED")),
          AsyncResponseTransformer.toBytes()).join().response();
      assertThat(got.checksumCRC32C()).as("the checksum comes back").isEqualTo(RIGHT);
      Throwable delete = catchThrowable(() -> c.deleteObject(b -> b.bucket(bucket).key("q/right")
          .ifMatch("\"not-its-etag\"")).join());
      c.putObject(b -> b.bucket(bucket).key("q/again"), AsyncRequestBody.fromBytes(BODY)).join();
      Throwable again = catchThrowable(() -> c.putObject(b -> b.bucket(bucket).key("q/again")
          .ifNoneMatch("*"), AsyncRequestBody.fromBytes(BODY)).join());
      assertThat(c.deleteObjects(b -> b.bucket(bucket).delete(d -> d.objects(o -> o.key("q/none"))
          .quiet(true))).join().errors()).as("a bulk delete of a missing name").isEmpty();
      return new Behaviour(wrong != null, got.metadata().containsKey("kvcache-crc32c"),
          delete != null, again != null);
    }
  }

  @Test
  void s3proxyHonoursChecksumsAndConditions() {
    assertThat(probe(s3proxy.endpoint())).isEqualTo(new Behaviour(true, true, true, true));
  }

  /**
   * rclone 1.75 keeps the checksum a PUT claims without checking it, capitalises metadata keys,
   * and ignores conditions: a damaged upload is caught when it is read, and a damaged copy's
   * conditional delete may remove a fresh copy another server wrote meanwhile.
   */
  @Test
  void rcloneTakesChecksumsOnTrustAndIgnoresConditions() {
    assertThat(probe(rclone.endpoint())).isEqualTo(new Behaviour(false, false, false, false));
  }
}
