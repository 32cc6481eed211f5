package dev.kvcache.server.s3;

import dev.kvcache.server.TestServer;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * A server in the test's JVM with its S3 port, one token that signs as {@link #ACCESS_KEY} and
 * may read and write the bucket {@code default}, and one that reads the metrics; the AWS SDK's
 * synchronous client on it.
 */
final class S3Fixture implements AutoCloseable {

  static final String ACCESS_KEY = "AKIDKVCACHETEST";
  static final String SECRET = "0123456789abcdef0123456789abcdef-s3";
  /** The secret of a token that may read the metrics. */
  static final String METRICS_SECRET = "0123456789abcdef0123456789abcdef-metrics";

  final TestServer server;
  final int s3Port;
  final S3Client s3;

  private S3Fixture(TestServer server, int s3Port) {
    this.server = server;
    this.s3Port = s3Port;
    this.s3 = client(SECRET);
  }

  /** A server with {@link TestServer}'s settings, the S3 port and the token, then {@code extra}. */
  static S3Fixture start(Path dir, Map<String, Object> extra) throws IOException {
    int s3Port = freePort();
    Map<String, Object> settings = new HashMap<>();
    settings.put("micronaut.server.port", freePort());
    settings.put("kvcache.s3.port", s3Port);
    settings.put("kvcache.auth.tokens.engine.secret", SECRET);
    settings.put("kvcache.auth.tokens.engine.access-key", ACCESS_KEY);
    settings.put("kvcache.auth.tokens.engine.read", "default");
    settings.put("kvcache.auth.tokens.engine.write", "default");
    settings.put("kvcache.auth.tokens.prometheus.secret", METRICS_SECRET);
    settings.put("kvcache.auth.tokens.prometheus.metrics", true);
    settings.putAll(extra);
    return new S3Fixture(TestServer.start(dir, settings), s3Port);
  }

  /** The S3 port's address. */
  URI endpoint() {
    return URI.create("http://127.0.0.1:" + s3Port);
  }

  /** The SDK's synchronous client, path-style, signing with {@code secret}. */
  S3Client client(String secret) {
    return S3Client.builder().region(Region.US_EAST_1)
        .endpointOverride(endpoint()).forcePathStyle(true)
        .httpClient(UrlConnectionHttpClient.create())
        .credentialsProvider(credentials(secret))
        .build();
  }

  static StaticCredentialsProvider credentials(String secret) {
    return StaticCredentialsProvider.create(AwsBasicCredentials.create(ACCESS_KEY, secret));
  }

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** {@code length} bytes that differ from one length to another. */
  static byte[] random(int length) {
    byte[] b = new byte[length];
    new Random(length).nextBytes(b);
    return b;
  }

  /** The value of {@code name}'s series whose {@code operation} is {@code operation}, or null. */
  Double metric(String name, String operation) throws Exception {
    java.net.http.HttpResponse<String> r = server.http.send(java.net.http.HttpRequest
        .newBuilder(server.uri("/prometheus"))
        .header("Authorization", "Bearer " + METRICS_SECRET).build(),
        java.net.http.HttpResponse.BodyHandlers.ofString());
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^" + name
        + "\\{[^}]*operation=\"" + operation + "\"[^}]*\\} (\\S+)$").matcher(r.body());
    return m.find() ? Double.parseDouble(m.group(1)) : null;
  }

  @Override
  public void close() {
    s3.close();
    server.close();
  }
}
