package dev.kvcache.s3api.auth;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import software.amazon.awssdk.checksums.spi.ChecksumAlgorithm;
import software.amazon.awssdk.http.ContentStreamProvider;
import software.amazon.awssdk.http.SdkHttpMethod;
import software.amazon.awssdk.http.SdkHttpRequest;
import software.amazon.awssdk.http.auth.aws.signer.AwsV4FamilyHttpSigner;
import software.amazon.awssdk.http.auth.aws.signer.AwsV4HttpSigner;
import software.amazon.awssdk.http.auth.spi.signer.HttpSigner;
import software.amazon.awssdk.http.auth.spi.signer.SignRequest;
import software.amazon.awssdk.http.auth.spi.signer.SignedRequest;
import software.amazon.awssdk.identity.spi.AwsCredentialsIdentity;

/**
 * A request signed by the AWS SDK for Java's own SigV4 signer, as S3 clients sign theirs: the
 * oracle {@link SigV4Verifier} is checked against.
 */
public final class SdkSigned implements RequestParts {

  final SdkHttpRequest request;
  /** The body as the signer sent it: aws-chunked frames when chunk encoding was on. */
  public final byte[] body;
  private final Map<String, List<String>> headers = new TreeMap<>();

  private SdkSigned(SignedRequest signed) {
    this.request = signed.request();
    this.body = signed.payload().map(SdkSigned::readAll).orElse(new byte[0]);
    signed.request().forEachHeader((k, v) -> headers.put(k.toLowerCase(Locale.ROOT), v));
    headers.put("host", List.of(request.host() + (request.port() == 80 ? "" : ":" + request.port())));
  }

  /** The builder's request signed with {@code key}/{@code secret}, as of {@code clock}. */
  public static SdkSigned sign(String key, String secret, Clock clock, SdkHttpMethod method, String uri,
      byte[] payload, Consumer<SignRequest.Builder<AwsCredentialsIdentity>> more) {
    SdkHttpRequest.Builder req = SdkHttpRequest.builder().method(method).uri(URI.create(uri));
    if (payload != null) {
      req.putHeader("Content-Length", Integer.toString(payload.length));
    }
    SignedRequest signed = AwsV4HttpSigner.create().sign(r -> {
      r.identity(AwsCredentialsIdentity.create(key, secret))
          .request(req.build())
          .putProperty(AwsV4HttpSigner.SERVICE_SIGNING_NAME, "s3")
          .putProperty(AwsV4HttpSigner.REGION_NAME, "us-east-1")
          .putProperty(AwsV4HttpSigner.DOUBLE_URL_ENCODE, false)
          .putProperty(AwsV4HttpSigner.NORMALIZE_PATH, false)
          .putProperty(HttpSigner.SIGNING_CLOCK, clock);
      if (payload != null) {
        r.payload(ContentStreamProvider.fromByteArray(payload));
      }
      more.accept(r);
    });
    return new SdkSigned(signed);
  }

  /** Presigned as the SDK's S3 presigner does: in the query, the payload unsigned. */
  public static Consumer<SignRequest.Builder<AwsCredentialsIdentity>> presigned(Duration valid) {
    return r -> r.putProperty(AwsV4HttpSigner.AUTH_LOCATION,
            AwsV4FamilyHttpSigner.AuthLocation.QUERY_STRING)
        .putProperty(AwsV4HttpSigner.EXPIRATION_DURATION, valid)
        .putProperty(AwsV4HttpSigner.PAYLOAD_SIGNING_ENABLED, false);
  }

  /** The payload signed or not, in aws-chunked frames or not, with a trailing checksum or none. */
  public static Consumer<SignRequest.Builder<AwsCredentialsIdentity>> payload(boolean signed,
      boolean chunked, ChecksumAlgorithm checksum) {
    return r -> {
      r.putProperty(AwsV4HttpSigner.PAYLOAD_SIGNING_ENABLED, signed)
          .putProperty(AwsV4HttpSigner.CHUNK_ENCODING_ENABLED, chunked);
      if (checksum != null) {
        r.putProperty(AwsV4HttpSigner.CHECKSUM_ALGORITHM, checksum);
      }
    };
  }

  /** The same request with header {@code name} (lower case) set to {@code value}. */
  public SdkSigned withHeader(String name, String value) {
    headers.put(name, List.of(value));
    return this;
  }

  @Override
  public String method() {
    return request.method().name();
  }

  @Override
  public String rawPath() {
    return request.encodedPath();
  }

  @Override
  public String rawQuery() {
    String uri = request.getUri().getRawQuery();
    return uri == null ? "" : uri;
  }

  @Override
  public java.util.Collection<String> headerNames() {
    return headers.keySet();
  }

  @Override
  public List<String> header(String name) {
    return headers.getOrDefault(name, List.of());
  }

  private static byte[] readAll(ContentStreamProvider p) {
    try (InputStream in = p.newStream()) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      in.transferTo(out);
      return out.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
