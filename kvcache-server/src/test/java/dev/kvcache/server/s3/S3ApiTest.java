package dev.kvcache.server.s3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.server.TestServer;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.ResponseBytes;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.core.async.AsyncResponseTransformer;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.ContentStreamProvider;
import software.amazon.awssdk.http.SdkHttpMethod;
import software.amazon.awssdk.http.SdkHttpRequest;
import software.amazon.awssdk.http.auth.aws.signer.AwsV4HttpSigner;
import software.amazon.awssdk.http.auth.spi.signer.SignedRequest;
import software.amazon.awssdk.identity.spi.AwsCredentialsIdentity;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3Configuration;
import software.amazon.awssdk.services.s3.presigner.S3Presigner;
import software.amazon.awssdk.services.s3.model.DeleteObjectsResponse;
import software.amazon.awssdk.services.s3.model.DeletedObject;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.NoSuchBucketException;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;
import software.amazon.awssdk.services.s3.model.PutObjectResponse;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * The S3 port, driven by the AWS SDK for Java as users drive it (its default checksums, its
 * synchronous and asynchronous clients, its presigner): objects round-trip byte for byte, whole
 * and by ranges, over HTTP/1.1 and HTTP/2, are found by HEAD and gone after DELETE; requests signed with a wrong secret, objects over the
 * largest block, unknown buckets and a body whose checksum does not match are refused with S3's
 * errors, and the refused body is not stored; the server's own port works as before beside it,
 * and its block API's fast paths take nothing on the S3 port.
 */
class S3ApiTest {

  private static final String ACCESS_KEY = S3Fixture.ACCESS_KEY;
  private static final String SECRET = S3Fixture.SECRET;

  @TempDir static Path dir;
  private static S3Fixture fixture;
  private static TestServer server;
  private static int s3Port;
  private static S3Client s3;

  @BeforeAll
  static void start() throws IOException {
    fixture = S3Fixture.start(dir, Map.of());
    server = fixture.server;
    s3Port = fixture.s3Port;
    s3 = fixture.s3;
  }

  @AfterAll
  static void stop() {
    fixture.close();
  }

  @Test
  void objectsRoundTripWholeAndByRangesAndAreGoneAfterDelete() {
    for (int length : new int[] {1, 65_537, 3 << 20}) {
      String key = "model@ws@worker/" + length + "/a b+c.bin";
      byte[] data = random(length);
      PutObjectResponse put = s3.putObject(b -> b.bucket("default").key(key),
          RequestBody.fromBytes(data));
      ResponseBytes<GetObjectResponse> got = s3.getObjectAsBytes(b -> b.bucket("default").key(key));
      assertThat(got.asByteArray()).isEqualTo(data);
      assertThat(got.response().eTag()).isEqualTo(put.eTag());
      assertThat(s3.headObject(b -> b.bucket("default").key(key)).contentLength())
          .isEqualTo(length);
      if (length > 200) {
        assertThat(s3.getObjectAsBytes(b -> b.bucket("default").key(key).range("bytes=100-199"))
            .asByteArray()).isEqualTo(Arrays.copyOfRange(data, 100, 200));
        assertThat(s3.getObjectAsBytes(b -> b.bucket("default").key(key).range("bytes=-10"))
            .asByteArray()).isEqualTo(Arrays.copyOfRange(data, length - 10, length));
      }
      s3.deleteObject(b -> b.bucket("default").key(key));
      assertThatThrownBy(() -> s3.getObjectAsBytes(b -> b.bucket("default").key(key)))
          .isInstanceOf(NoSuchKeyException.class);
      assertThatThrownBy(() -> s3.headObject(b -> b.bucket("default").key(key)))
          .isInstanceOfSatisfying(S3Exception.class, e -> assertThat(e.statusCode()).isEqualTo(404));
    }
  }

  @Test
  void requestsAndErrorsAreCountedByOperation() throws Exception {
    double puts = count("kvcache_s3_requests_seconds_count", "PutObject");
    double gets = count("kvcache_s3_requests_seconds_count", "GetObject");
    double missing = count("kvcache_s3_errors_total", "GetObject");
    s3.putObject(b -> b.bucket("default").key("counted"), RequestBody.fromBytes(random(100)));
    s3.getObjectAsBytes(b -> b.bucket("default").key("counted"));
    assertThatThrownBy(() -> s3.getObjectAsBytes(b -> b.bucket("default").key("never-stored")))
        .isInstanceOf(NoSuchKeyException.class);
    assertThat(count("kvcache_s3_requests_seconds_count", "PutObject")).isEqualTo(puts + 1);
    assertThat(count("kvcache_s3_requests_seconds_count", "GetObject")).isEqualTo(gets + 2);
    assertThat(count("kvcache_s3_errors_total", "GetObject")).isEqualTo(missing + 1);
  }

  private static double count(String name, String operation) throws Exception {
    Double v = fixture.metric(name, operation);
    assertThat(v).as(name + " of " + operation).isNotNull();
    return v;
  }

  @Test
  void deleteObjectsDeletesEveryKeyItNames() {
    List<String> keys = List.of("batch/1", "batch/2", "batch/never-stored");
    for (String k : keys.subList(0, 2)) {
      s3.putObject(b -> b.bucket("default").key(k), RequestBody.fromBytes(random(1000)));
    }
    DeleteObjectsResponse deleted = s3.deleteObjects(b -> b.bucket("default").delete(d -> d
        .objects(keys.stream().map(k -> ObjectIdentifier.builder().key(k).build()).toList())));
    assertThat(deleted.deleted()).extracting(DeletedObject::key)
        .containsExactlyInAnyOrderElementsOf(keys);
    assertThat(deleted.errors()).isEmpty();
    for (String k : keys) {
      assertThatThrownBy(() -> s3.headObject(b -> b.bucket("default").key(k)))
          .isInstanceOfSatisfying(S3Exception.class, e -> assertThat(e.statusCode()).isEqualTo(404));
    }
  }

  @Test
  void theAsynchronousClientRoundTripsToo() throws Exception {
    try (S3AsyncClient async = S3AsyncClient.builder().region(Region.US_EAST_1)
        .endpointOverride(URI.create("http://127.0.0.1:" + s3Port)).forcePathStyle(true)
        .credentialsProvider(S3Fixture.credentials(SECRET)).build()) {
      byte[] data = random(2 << 20);
      async.putObject(b -> b.bucket("default").key("async"), AsyncRequestBody.fromBytes(data))
          .get();
      assertThat(async.getObject(b -> b.bucket("default").key("async"),
          AsyncResponseTransformer.toBytes()).get().asByteArray()).isEqualTo(data);
    }
  }

  @Test
  void aPresignedUrlReadsTheObjectOverHttp2() throws Exception {
    byte[] data = random(1 << 20);
    s3.putObject(b -> b.bucket("default").key("presigned"), RequestBody.fromBytes(data));
    try (S3Presigner presigner = S3Presigner.builder().region(Region.US_EAST_1)
        .endpointOverride(URI.create("http://127.0.0.1:" + s3Port))
        .serviceConfiguration(S3Configuration.builder().pathStyleAccessEnabled(true).build())
        .credentialsProvider(S3Fixture.credentials(SECRET)).build()) {
      URI url = presigner.presignGetObject(p -> p.signatureDuration(Duration.ofMinutes(5))
          .getObjectRequest(g -> g.bucket("default").key("presigned"))).url().toURI();
      HttpClient h2 = HttpClient.newBuilder().version(HttpClient.Version.HTTP_2).build();
      h2.send(HttpRequest.newBuilder(url).build(), HttpResponse.BodyHandlers.discarding());
      HttpResponse<byte[]> got = h2.send(HttpRequest.newBuilder(url).build(),
          HttpResponse.BodyHandlers.ofByteArray()); // the connection upgraded by the first
      assertThat(got.version()).isEqualTo(HttpClient.Version.HTTP_2);
      assertThat(got.body()).isEqualTo(data);
      HttpResponse<String> tampered = h2.send(HttpRequest.newBuilder(
          URI.create(url.toString().replace("presigned", "presigneD"))).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(tampered.statusCode()).isEqualTo(403);
      assertThat(tampered.body()).contains("<Code>SignatureDoesNotMatch</Code>");
    }
  }

  @Test
  void aWrongSecretAnUnknownBucketAndAnObjectOverTheLargestBlockAreRefused() {
    try (S3Client wrong = client("not-the-secret-not-the-secret-00")) {
      assertThatThrownBy(() -> wrong.putObject(b -> b.bucket("default").key("k"),
          RequestBody.fromBytes(random(10)))).isInstanceOfSatisfying(S3Exception.class,
              e -> assertThat(e.awsErrorDetails().errorCode()).isEqualTo("SignatureDoesNotMatch"));
    }
    assertThatThrownBy(() -> s3.putObject(b -> b.bucket("nope").key("k"),
        RequestBody.fromBytes(random(10)))).isInstanceOf(NoSuchBucketException.class);
    assertThatThrownBy(() -> s3.putObject(b -> b.bucket("other").key("k"),
        RequestBody.fromBytes(random(10)))).isInstanceOfSatisfying(S3Exception.class,
            e -> assertThat(e.awsErrorDetails().errorCode()).isEqualTo("AccessDenied"));
    assertThatThrownBy(() -> s3.putObject(b -> b.bucket("default").key("big"),
        RequestBody.fromBytes(random(TestServer.MAX_BLOCK_BYTES + 1))))
        .isInstanceOfSatisfying(S3Exception.class,
            e -> assertThat(e.awsErrorDetails().errorCode()).as(e.toString()).isEqualTo("EntityTooLarge"));
  }

  @Test
  void aBodyWhoseChecksumDoesNotMatchIsRefusedAndNotStored() throws Exception {
    byte[] data = random(100_000);
    CRC32 crc = new CRC32();
    crc.update(data);
    crc.update(new byte[] {1}); // the checksum of other bytes
    String wrong = Base64.getEncoder().encodeToString(
        java.nio.ByteBuffer.allocate(4).putInt((int) crc.getValue()).array());
    SdkHttpRequest put = SdkHttpRequest.builder().method(SdkHttpMethod.PUT)
        .uri(URI.create("http://127.0.0.1:" + s3Port + "/default/damaged"))
        .putHeader("x-amz-checksum-crc32", wrong)
        .putHeader("Content-Length", Integer.toString(data.length)).build();
    SignedRequest signed = AwsV4HttpSigner.create().sign(r -> r
        .identity(AwsCredentialsIdentity.create(ACCESS_KEY, SECRET)).request(put)
        .payload(ContentStreamProvider.fromByteArray(data))
        .putProperty(AwsV4HttpSigner.SERVICE_SIGNING_NAME, "s3")
        .putProperty(AwsV4HttpSigner.REGION_NAME, "us-east-1")
        .putProperty(AwsV4HttpSigner.PAYLOAD_SIGNING_ENABLED, false));
    HttpRequest.Builder send = HttpRequest.newBuilder(signed.request().getUri())
        .PUT(HttpRequest.BodyPublishers.ofByteArray(data));
    signed.request().forEachHeader((k, v) -> {
      if (!k.equalsIgnoreCase("host") && !k.equalsIgnoreCase("content-length")) {
        v.forEach(value -> send.header(k, value));
      }
    });
    HttpResponse<String> answer = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .build().send(send.build(), HttpResponse.BodyHandlers.ofString());
    assertThat(answer.statusCode()).as(answer.body()).isEqualTo(400);
    assertThat(answer.body()).contains("<Code>BadDigest</Code>");
    assertThat(answer.headers().firstValue("x-amz-request-id")).isPresent();
    assertThatThrownBy(() -> s3.headObject(b -> b.bucket("default").key("damaged")))
        .isInstanceOfSatisfying(S3Exception.class, e -> assertThat(e.statusCode()).isEqualTo(404));
  }

  @Test
  void theServersOwnPortWorksAsBeforeAndItsPathsAreS3KeysOnTheS3Port() throws Exception {
    HttpResponse<String> health = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
        server.base.resolve("/health")).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(health.statusCode()).isEqualTo(200);
    // on the S3 port, /v1/... names the bucket "v1", which is no namespace
    assertThatThrownBy(() -> s3.getObjectAsBytes(b -> b.bucket("v1").key("namespaces/x")))
        .isInstanceOf(NoSuchBucketException.class);
  }

  @Test
  void theBlockApisFastPathsTakeNothingOnTheS3Port() throws Exception {
    String block = "/v1/namespaces/default/blocks/000102030405060708090a0b0c0d0e0f";
    URI onS3 = URI.create("http://127.0.0.1:" + s3Port + block);
    for (HttpClient.Version version : HttpClient.Version.values()) {
      HttpClient http = HttpClient.newBuilder().version(version).build();
      http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s3Port + "/")).build(),
          HttpResponse.BodyHandlers.discarding()); // an HTTP/2 connection, upgraded by the first
      HttpResponse<String> put = http.send(HttpRequest.newBuilder(onS3)
          .header("Authorization", "Bearer " + SECRET)
          .header("Content-Type", "application/octet-stream")
          .PUT(HttpRequest.BodyPublishers.ofByteArray(random(4096))).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(put.version()).isEqualTo(version);
      assertThat(put.body()).as(version.toString()).contains("<Code>InvalidArgument");
      HttpResponse<String> get = http.send(HttpRequest.newBuilder(onS3)
          .header("Authorization", "Bearer " + SECRET).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(get.body()).as(version.toString()).contains("<Code>InvalidArgument");
      HttpResponse<String> onMain = http.send(HttpRequest.newBuilder(server.base.resolve(block))
          .header("Authorization", "Bearer " + SECRET).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(onMain.statusCode()).as("the block was not stored").isEqualTo(404);
    }
  }

  private static S3Client client(String secret) {
    return fixture.client(secret);
  }

  private static byte[] random(int length) {
    return S3Fixture.random(length);
  }
}
