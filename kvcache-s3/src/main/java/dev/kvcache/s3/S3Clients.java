package dev.kvcache.s3;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.http.async.SdkAsyncHttpClient;
import software.amazon.awssdk.http.nio.netty.NettyNioAsyncHttpClient;
import software.amazon.awssdk.http.nio.netty.SdkEventLoopGroup;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.retries.StandardRetryStrategy;
import software.amazon.awssdk.retries.api.BackoffStrategy;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.S3AsyncClientBuilder;

/**
 * The AWS SDK client a tier's settings describe, with the Netty event loops it runs on (none for
 * the CRT client): closing it stops them at once, where the SDK's own would linger for a quiet
 * period of two seconds.
 */
record S3Clients(S3AsyncClient s3, SdkEventLoopGroup loops) implements AutoCloseable {

  /** The most times one request is sent. */
  static final int MAX_ATTEMPTS = 3;
  /** The pause before the first retry of a throttled request, before jitter. */
  static final Duration FIRST_THROTTLED_RETRY = Duration.ofMillis(50);
  /** The longest pause before a retry of a throttled request. */
  static final Duration LONGEST_THROTTLED_RETRY = Duration.ofSeconds(1);

  /**
   * Whether a request failed on its connection without an answer (closed, reset, refused), and not
   * by a time-out: a store too slow to answer would make the retry wait as long again.
   */
  static boolean connectionFailed(Throwable error) {
    if (!(error instanceof SdkClientException)) {
      return false; // an answer of the store's: an error status, a refusal
    }
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t.getClass().getSimpleName().contains("Timeout")) {
        return false;
      }
    }
    return true;
  }

  /**
   * Whether the store asked the client to slow down ({@code 503 SlowDown}, {@code 429}, a
   * throttling code) or is briefly unavailable ({@code 503}): S3 answers so to a burst it has not
   * scaled for yet, and asks for the request to be sent again after a while.
   */
  static boolean throttled(Throwable error) {
    return error instanceof AwsServiceException s
        && (s.isThrottlingException() || s.statusCode() == 503);
  }

  /**
   * A client for the settings. Checksums are the tier's: the SDK computes none on requests and
   * checks none on answers (the tier sends each block's CRC32C, computed where the block was
   * written, and checks what it receives as it copies it). The SDK sends a request up to {@value
   * #MAX_ATTEMPTS} times: at once when it failed on its connection without an answer (not by a
   * time-out: a pooled connection the store closed as it was reused is no failure of the store),
   * and after a jittered pause ({@link #FIRST_THROTTLED_RETRY} doubling, full jitter) when the
   * store throttled it ({@link #throttled}), as S3 asks of its clients. Other failures are not
   * retried: the tier backs off a failing store itself, and a read that fails is a miss.
   *
   * @throws IOException if the CA file cannot be read
   */
  static S3Clients of(S3TierConfig config) throws IOException {
    SdkEventLoopGroup loops = null;
    SdkAsyncHttpClient.Builder<?> http;
    if (config.httpClient() == S3TierConfig.HttpClient.CRT) {
      http = CrtClient.builder(config);
    } else {
      loops = SdkEventLoopGroup.builder()
          .numberOfThreads(Math.max(2, Runtime.getRuntime().availableProcessors()))
          .build();
      NettyNioAsyncHttpClient.Builder netty = NettyNioAsyncHttpClient.builder()
          .eventLoopGroup(loops)
          .maxConcurrency(config.concurrency())
          .connectionTimeout(config.connectTimeout())
          .connectionAcquisitionTimeout(config.requestTimeout())
          .readTimeout(config.requestTimeout())
          .writeTimeout(config.requestTimeout());
      if (config.caFile().isPresent()) {
        TrustManager[] trust = trustManagers(config);
        netty.tlsTrustManagersProvider(() -> trust);
      }
      http = netty;
    }
    S3AsyncClientBuilder b = S3AsyncClient.builder()
        .httpClientBuilder(http)
        .region(Region.of(config.region()))
        .forcePathStyle(config.pathStyle())
        .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
        .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
        .overrideConfiguration(o -> o
            .apiCallTimeout(config.requestTimeout())
            .retryStrategy(StandardRetryStrategy.builder()
                .maxAttempts(MAX_ATTEMPTS)
                .retryOnException(S3Clients::connectionFailed)
                .retryOnException(S3Clients::throttled)
                .treatAsThrottling(S3Clients::throttled)
                .backoffStrategy(BackoffStrategy.retryImmediately())
                .throttlingBackoffStrategy(BackoffStrategy.exponentialDelay(
                    FIRST_THROTTLED_RETRY, LONGEST_THROTTLED_RETRY))
                .circuitBreakerEnabled(false)
                .useClientDefaults(false)
                .build()));
    config.endpoint().ifPresent(b::endpointOverride);
    if (config.accessKeyId().isPresent()) {
      b.credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(
          config.accessKeyId().get(), config.secretAccessKey().get())));
    } else {
      b.credentialsProvider(DefaultCredentialsProvider.builder().build());
    }
    return new S3Clients(b.build(), loops);
  }

  @Override
  public void close() {
    s3.close();
    if (loops != null) {
      loops.eventLoopGroup().shutdownGracefully(50, 5_000, TimeUnit.MILLISECONDS);
    }
  }

  /** The CRT client, in a class of its own so that it is loaded only when chosen. */
  private static final class CrtClient {
    static SdkAsyncHttpClient.Builder<?> builder(S3TierConfig config) {
      try {
        return software.amazon.awssdk.http.crt.AwsCrtAsyncHttpClient.builder()
            .maxConcurrency(config.concurrency())
            .connectionTimeout(config.connectTimeout())
            .connectionAcquisitionTimeout(config.requestTimeout());
      } catch (NoClassDefFoundError e) {
        throw new IllegalStateException("the CRT HTTP client is not on the class path: add"
            + " software.amazon.awssdk:aws-crt-client and software.amazon.awssdk.crt:aws-crt", e);
      }
    }
  }

  private static TrustManager[] trustManagers(S3TierConfig config) throws IOException {
    try (InputStream in = Files.newInputStream(config.caFile().get())) {
      KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
      store.load(null, null);
      int n = 0;
      for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
        store.setCertificateEntry("ca-" + n++, c);
      }
      if (n == 0) {
        throw new IOException("the CA file " + config.caFile().get() + " holds no certificate");
      }
      TrustManagerFactory f = TrustManagerFactory.getInstance(
          TrustManagerFactory.getDefaultAlgorithm());
      f.init(store);
      return f.getTrustManagers();
    } catch (GeneralSecurityException e) {
      throw new IOException("the CA file " + config.caFile().get() + " cannot be read as PEM"
          + " certificates: " + e.getMessage(), e);
    }
  }
}
