package dev.kvcache.s3api.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.s3api.S3Error;
import dev.kvcache.s3api.S3Exception;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Map;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.http.SdkHttpMethod;

/**
 * Requests signed by the AWS SDK's own signer, in each way S3 clients sign them, are verified;
 * a wrong secret, an unknown key, a changed byte of the request, a skewed clock and an expired
 * presigned URL are each refused with the error S3 gives.
 */
class SigV4VerifierTest {

  private static final Instant NOW = Instant.parse("2026-11-30T12:00:00Z");
  private static final Clock CLOCK = Clock.fixed(NOW, ZoneOffset.UTC);
  private static final SigV4Verifier VERIFIER =
      new SigV4Verifier(Map.of("AKIDKVCACHE", "s3cr3t/key+with=signs")::get, CLOCK);
  /** A key as engines name blocks, and characters that URI encoding treats each its own way. */
  private static final String KEY_URI = "https://kv.example:9000/bucket/"
      + "model%40ws%40worker/a%20b+c~d%2Be%3Dchunk.bin";

  @Test
  void aRequestSignedInItsHeaderWithAnUnsignedPayloadIsVerified() throws Exception {
    SdkSigned r = SdkSigned.sign("AKIDKVCACHE", "s3cr3t/key+with=signs", CLOCK, SdkHttpMethod.PUT,
        KEY_URI, bytes("block"), SdkSigned.payload(false, false, null));
    Verified v = VERIFIER.verify(r);
    assertThat(v.accessKey()).isEqualTo("AKIDKVCACHE");
    assertThat(v.payload()).isEqualTo(Payload.UNSIGNED);
    assertThat(v.chunks()).isNull();
  }

  @Test
  void aRequestWithASignedPayloadHashAndAQueryIsVerifiedAndTellsTheHash() throws Exception {
    SdkSigned r = SdkSigned.sign("AKIDKVCACHE", "s3cr3t/key+with=signs", CLOCK, SdkHttpMethod.GET,
        "http://kv.example:9000/bucket?list-type=2&prefix=model%40&max-keys=10&start-after=",
        null, SdkSigned.payload(true, false, null));
    Verified v = VERIFIER.verify(r);
    assertThat(v.payload()).isEqualTo(Payload.SIGNED);
    assertThat(v.payloadSha256()).isEqualTo(Hashes.EMPTY_SHA256);
  }

  @Test
  void aPresignedUrlIsVerifiedWithinItsTimeAndRefusedAfter() throws Exception {
    SdkSigned r = SdkSigned.sign("AKIDKVCACHE", "s3cr3t/key+with=signs", CLOCK, SdkHttpMethod.GET,
        KEY_URI, null, SdkSigned.presigned(Duration.ofMinutes(10)));
    assertThat(r.header("authorization")).isEmpty();
    assertThat(VERIFIER.verify(r).payload()).isEqualTo(Payload.UNSIGNED);

    SigV4Verifier later = new SigV4Verifier(Map.of("AKIDKVCACHE", "s3cr3t/key+with=signs")::get,
        Clock.fixed(NOW.plus(Duration.ofMinutes(11)), ZoneOffset.UTC));
    assertRefused(() -> later.verify(r), S3Error.ACCESS_DENIED, "expired");
  }

  @Test
  void streamedBodiesTellTheirFormAndSignedChunksGetASignerSeededWithTheRequestsSignature()
      throws Exception {
    SdkSigned signed = SdkSigned.sign("AKIDKVCACHE", "s3cr3t/key+with=signs", CLOCK,
        SdkHttpMethod.PUT, KEY_URI, new byte[100_000], SdkSigned.payload(true, true, null));
    Verified v = VERIFIER.verify(signed);
    assertThat(v.payload()).isEqualTo(Payload.STREAMING_SIGNED);
    assertThat(signed.header("authorization").get(0)).endsWith("Signature=" + v.chunks().seed());

    SdkSigned unsigned = SdkSigned.sign("AKIDKVCACHE", "s3cr3t/key+with=signs", CLOCK,
        SdkHttpMethod.PUT, KEY_URI, new byte[100_000], SdkSigned.payload(false, true,
            software.amazon.awssdk.checksums.DefaultChecksumAlgorithm.CRC32));
    Verified u = VERIFIER.verify(unsigned);
    assertThat(u.payload()).isEqualTo(Payload.STREAMING_UNSIGNED_TRAILER);
    assertThat(u.chunks()).isNull();
  }

  @Test
  void aWrongSecretAnUnknownKeyAndAChangedRequestAreRefused() {
    assertRefused(() -> VERIFIER.verify(SdkSigned.sign("AKIDKVCACHE", "not-the-secret", CLOCK,
            SdkHttpMethod.GET, KEY_URI, null, SdkSigned.payload(false, false, null))),
        S3Error.SIGNATURE_DOES_NOT_MATCH, "does not match");
    assertRefused(() -> VERIFIER.verify(SdkSigned.sign("AKIDOTHER", "s3cr3t/key+with=signs",
            CLOCK, SdkHttpMethod.GET, KEY_URI, null, SdkSigned.payload(false, false, null))),
        S3Error.INVALID_ACCESS_KEY_ID, "AKIDOTHER");
    SdkSigned r = SdkSigned.sign("AKIDKVCACHE", "s3cr3t/key+with=signs", CLOCK, SdkHttpMethod.GET,
        KEY_URI, null, SdkSigned.payload(false, false, null));
    assertRefused(() -> VERIFIER.verify(new Changed(r, "GET", r.rawPath() + "x", r.rawQuery())),
        S3Error.SIGNATURE_DOES_NOT_MATCH, "does not match");
    assertRefused(() -> VERIFIER.verify(new Changed(r, "DELETE", r.rawPath(), r.rawQuery())),
        S3Error.SIGNATURE_DOES_NOT_MATCH, "does not match");
    assertRefused(() -> VERIFIER.verify(r.withHeader("host", "other.example:9000")),
        S3Error.SIGNATURE_DOES_NOT_MATCH, "does not match");
  }

  @Test
  void headersThatChangeWhatIsStoredAreRefusedUnsignedAndOthersAreNot() throws Exception {
    assertRefused(() -> VERIFIER.verify(signedGet().withHeader("x-amz-meta-owner", "someone")
            .withHeader("x-amz-checksum-crc32", "AAAAAA==")),
        S3Error.ACCESS_DENIED, "not signed: x-amz-checksum-crc32, x-amz-meta-owner");
    assertThat(VERIFIER.verify(signedGet().withHeader("user-agent", "client/1.0")
        .withHeader("x-amzn-trace-id", "Root=1-abc").withHeader("x-amz-user-agent", "sdk")))
        .as("headers an SDK leaves unsigned").isNotNull();
  }

  @Test
  void aMissingOrUnreadableDateIsAccessDenied() {
    assertRefused(() -> VERIFIER.verify(signedGet().withHeader("x-amz-date", "03032006")),
        S3Error.ACCESS_DENIED, "not \"03032006\"");
    assertRefused(() -> VERIFIER.verify(signedGet().withHeader("x-amz-date", "")),
        S3Error.ACCESS_DENIED, "x-amz-date");
  }

  private static SdkSigned signedGet() {
    return SdkSigned.sign("AKIDKVCACHE", "s3cr3t/key+with=signs", CLOCK, SdkHttpMethod.GET,
        KEY_URI, null, SdkSigned.payload(false, false, null));
  }

  @Test
  void aClockMoreThanFifteenMinutesAwayIsRefusedAsSkewed() {
    Clock early = Clock.fixed(NOW.minus(Duration.ofMinutes(16)), ZoneOffset.UTC);
    assertRefused(() -> VERIFIER.verify(SdkSigned.sign("AKIDKVCACHE", "s3cr3t/key+with=signs",
            early, SdkHttpMethod.GET, KEY_URI, null, SdkSigned.payload(false, false, null))),
        S3Error.REQUEST_TIME_TOO_SKEWED, "960 s");
  }

  @Test
  void anUnsignedRequestAndSignatureVersion2AreRefusedSayingWhy() {
    SdkSigned r = SdkSigned.sign("AKIDKVCACHE", "s3cr3t/key+with=signs", CLOCK, SdkHttpMethod.GET,
        KEY_URI, null, SdkSigned.payload(false, false, null));
    assertRefused(() -> VERIFIER.verify(new Changed(r, "GET", r.rawPath(), "") {
      @Override
      public java.util.List<String> header(String name) {
        return name.equals("authorization") ? java.util.List.of() : super.header(name);
      }
    }), S3Error.ACCESS_DENIED, "not signed");
    assertRefused(() -> VERIFIER.verify(r.withHeader("authorization", "AWS AKIDKVCACHE:abc=")),
        S3Error.INVALID_REQUEST, "Version 2");
    assertRefused(() -> VERIFIER.verify(r.withHeader("authorization", "Bearer s3cr3t")),
        S3Error.INVALID_ARGUMENT, "not Bearer");
    assertRefused(() -> VERIFIER.verify(new Changed(r, "GET", r.rawPath(),
        "AWSAccessKeyId=AKIDKVCACHE&Signature=abc%3D&Expires=1796046746") {
      @Override
      public java.util.List<String> header(String name) {
        return name.equals("authorization") ? java.util.List.of() : super.header(name);
      }
    }), S3Error.ACCESS_DENIED, "signature_version='s3v4'");
  }

  private static void assertRefused(ThrowingCallable call, S3Error error, String message) {
    assertThatThrownBy(call).isInstanceOfSatisfying(S3Exception.class, e -> {
      assertThat(e.error()).isEqualTo(error);
      assertThat(e.getMessage()).contains(message);
    });
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** {@code base} with another method, path or query. */
  private static class Changed implements RequestParts {
    private final RequestParts base;
    private final String method;
    private final String path;
    private final String query;

    Changed(RequestParts base, String method, String path, String query) {
      this.base = base;
      this.method = method;
      this.path = path;
      this.query = query;
    }

    @Override
    public String method() {
      return method;
    }

    @Override
    public String rawPath() {
      return path;
    }

    @Override
    public String rawQuery() {
      return query;
    }

    @Override
    public java.util.Collection<String> headerNames() {
      return base.headerNames();
    }

    @Override
    public java.util.List<String> header(String name) {
      return base.header(name);
    }
  }
}
