package dev.kvcache.s3api.body;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.s3api.S3Error;
import dev.kvcache.s3api.S3Exception;
import dev.kvcache.s3api.auth.SdkSigned;
import dev.kvcache.s3api.auth.SigV4Verifier;
import dev.kvcache.s3api.auth.Verified;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Map;
import java.util.Random;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.checksums.DefaultChecksumAlgorithm;
import software.amazon.awssdk.http.SdkHttpMethod;

/**
 * Bodies the AWS SDK's signer frames as aws-chunked (signed chunks, signed chunks with a trailing
 * CRC32, unsigned chunks with one), fed in pieces of every size, decode to the bytes put; a byte
 * changed anywhere in them, a checksum that does not match, and a body cut short are refused.
 */
class AwsChunkedDecoderTest {

  private static final Clock CLOCK = Clock.fixed(Instant.parse("2026-11-30T12:00:00Z"),
      ZoneOffset.UTC);
  private static final SigV4Verifier VERIFIER = new SigV4Verifier(Map.of("AK", "SK")::get, CLOCK);
  private static final String URI = "https://kv.example:9000/bucket/model%40chunk";

  @ParameterizedTest
  @ValueSource(ints = {0, 1, 8191, 65_536, 200_003})
  void signedChunksDecodeToTheBytesPutInPiecesOfAnySize(int length) throws Exception {
    byte[] payload = random(length);
    SdkSigned r = SdkSigned.sign("AK", "SK", CLOCK, SdkHttpMethod.PUT, URI.replace("https", "http"),
        payload, SdkSigned.payload(true, true, null));
    assertThat(decode(r, r.body, 1 + length % 977)).isEqualTo(payload);
    assertThat(decode(r, r.body, r.body.length)).isEqualTo(payload);
  }

  @Test
  void signedChunksWithATrailingCrc32DecodeAndCheckIt() throws Exception {
    byte[] payload = random(300_000);
    SdkSigned r = SdkSigned.sign("AK", "SK", CLOCK, SdkHttpMethod.PUT, URI.replace("https", "http"),
        payload, SdkSigned.payload(true, true, DefaultChecksumAlgorithm.CRC32));
    assertThat(r.header("x-amz-content-sha256"))
        .containsExactly("STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER");
    assertThat(decode(r, r.body, 4096)).isEqualTo(payload);
  }

  @Test
  void unsignedChunksWithATrailingCrc32DecodeAndCheckIt() throws Exception {
    byte[] payload = random(300_000);
    SdkSigned r = SdkSigned.sign("AK", "SK", CLOCK, SdkHttpMethod.PUT, URI, payload,
        SdkSigned.payload(false, true, DefaultChecksumAlgorithm.CRC32));
    assertThat(r.header("x-amz-content-sha256"))
        .containsExactly("STREAMING-UNSIGNED-PAYLOAD-TRAILER");
    assertThat(decode(r, r.body, 777)).isEqualTo(payload);
  }

  @Test
  void aByteChangedInASignedChunkItsSignatureOrItsTrailerIsRefused() throws Exception {
    byte[] payload = random(200_000);
    SdkSigned r = SdkSigned.sign("AK", "SK", CLOCK, SdkHttpMethod.PUT, URI.replace("https", "http"),
        payload, SdkSigned.payload(true, true, DefaultChecksumAlgorithm.CRC32));
    String text = new String(r.body, StandardCharsets.ISO_8859_1);
    int inData = text.indexOf("\r\n") + 1000;
    int inSignature = text.indexOf("chunk-signature=") + 20;
    int inTrailer = text.indexOf("x-amz-checksum-crc32:") + 23;
    for (int at : new int[] {inData, inSignature}) {
      assertRefused(() -> decode(r, flipped(r.body, at), 8192), S3Error.SIGNATURE_DOES_NOT_MATCH);
    }
    // the trailer's checksum changed: its signature no longer matches
    assertRefused(() -> decode(r, flipped(r.body, inTrailer), 8192),
        S3Error.SIGNATURE_DOES_NOT_MATCH);
  }

  @Test
  void aByteChangedInAnUnsignedBodyFailsItsTrailingChecksum() throws Exception {
    byte[] payload = random(200_000);
    SdkSigned r = SdkSigned.sign("AK", "SK", CLOCK, SdkHttpMethod.PUT, URI, payload,
        SdkSigned.payload(false, true, DefaultChecksumAlgorithm.CRC32));
    int inData = new String(r.body, StandardCharsets.ISO_8859_1).indexOf("\r\n") + 5000;
    assertRefused(() -> decode(r, flipped(r.body, inData), 8192), S3Error.BAD_DIGEST);
  }

  @Test
  void aBodyCutShortOrLongerThanItsDecodedLengthIsIncomplete() throws Exception {
    byte[] payload = random(100_000);
    SdkSigned r = SdkSigned.sign("AK", "SK", CLOCK, SdkHttpMethod.PUT, URI, payload,
        SdkSigned.payload(false, true, DefaultChecksumAlgorithm.CRC32));
    byte[] cut = java.util.Arrays.copyOf(r.body, r.body.length - 10);
    assertRefused(() -> decode(r, cut, 8192), S3Error.INCOMPLETE_BODY);
    assertRefused(() -> decode(r, r.body, 8192, 99_999), S3Error.INCOMPLETE_BODY);
    assertRefused(() -> decode(r, r.body, 8192, 100_001), S3Error.INCOMPLETE_BODY);
    byte[] garbage = "zz\r\nabc\r\n".getBytes(StandardCharsets.US_ASCII);
    assertRefused(() -> decode(r, garbage, 8192), S3Error.INCOMPLETE_BODY);
  }

  /** Decodes {@code body} as {@code r}'s headers say, fed in pieces of {@code piece} bytes. */
  private static byte[] decode(SdkSigned r, byte[] body, int piece) throws S3Exception {
    return decode(r, body, piece, r.header("x-amz-decoded-content-length").stream().findFirst()
        .map(Long::parseLong).orElse(-1L));
  }

  private static byte[] decode(SdkSigned r, byte[] body, int piece, long decodedLength)
      throws S3Exception {
    Verified v = VERIFIER.verify(r);
    assertThat(v.payload().chunked()).isTrue();
    ChecksumAlgorithm trailer = r.header("x-amz-trailer").stream().findFirst()
        .flatMap(ChecksumAlgorithm::ofHeader).orElse(null);
    AwsChunkedDecoder d = new AwsChunkedDecoder(v.chunks(), v.payload().trailerSigned(), trailer,
        decodedLength);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (int at = 0; at < body.length; at += piece) {
      int from = at;
      d.feed(ByteBuffer.wrap(body, at, Math.min(piece, body.length - at)),
          (offset, length) -> out.write(body, from + offset, length));
    }
    d.finish();
    return out.toByteArray();
  }

  private static void assertRefused(ThrowingCallable call, S3Error error) {
    assertThatThrownBy(call).isInstanceOfSatisfying(S3Exception.class,
        e -> assertThat(e.error()).as(e.getMessage()).isEqualTo(error));
  }

  private static byte[] flipped(byte[] body, int at) {
    byte[] copy = body.clone();
    copy[at] ^= 1;
    return copy;
  }

  private static byte[] random(int length) {
    byte[] b = new byte[length];
    new Random(length).nextBytes(b);
    return b;
  }
}
