package dev.kvcache.server.s3;

import dev.kvcache.s3api.S3Error;
import dev.kvcache.s3api.S3Exception;
import dev.kvcache.s3api.auth.Hashes;
import dev.kvcache.s3api.auth.Payload;
import dev.kvcache.s3api.auth.RequestParts;
import dev.kvcache.s3api.auth.Verified;
import dev.kvcache.s3api.body.AwsChunkedDecoder;
import dev.kvcache.s3api.body.ChecksumAlgorithm;
import io.netty.buffer.ByteBuf;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.zip.CRC32C;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A PutObject's body on its way into the cache: decoded from aws-chunked frames where it comes in
 * them (signatures and trailing checksum checked by the decoder), its CRC32C computed for its
 * ETag, and checked against what the client sent: a checksum header ({@code x-amz-checksum-*}),
 * a {@code Content-MD5}, and the SHA-256 it signed. A check that fails ends the body with the error before its end, so
 * the cache's writer never commits: nothing is stored.
 */
final class ObjectBody {

  /** The {@code x-amz-checksum-*} headers that are not a body's checksum. */
  private static final Set<String> NOT_CHECKSUMS = Set.of("x-amz-checksum-type",
      "x-amz-checksum-algorithm", "x-amz-checksum-mode");

  private final AwsChunkedDecoder decoder;
  private final ChecksumAlgorithm trailingAlgorithm;
  private final ChecksumAlgorithm headerAlgorithm;
  private final String headerValue;
  private final ChecksumAlgorithm.Running headerChecksum;
  private final String signedSha256;
  private final MessageDigest sha256;
  private final byte[] contentMd5;
  private final MessageDigest md5;
  private final CRC32C crc = new CRC32C();
  private String trailingValue;

  ObjectBody(RequestParts parts, Payload payload, Verified signed, long length)
      throws S3Exception {
    this(parts, payload, signed, length, true);
  }

  /**
   * @param headerChecksums whether the request's {@code x-amz-checksum-*} headers are its body's
   *     (not so for a CompleteMultipartUpload, where they are the object's); a {@code
   *     Content-MD5} is always the body's
   */
  ObjectBody(RequestParts parts, Payload payload, Verified signed, long length,
      boolean headerChecksums) throws S3Exception {
    ChecksumAlgorithm found = null;
    String value = null;
    for (ChecksumAlgorithm a : headerChecksums ? ChecksumAlgorithm.values()
        : new ChecksumAlgorithm[0]) {
      String v = parts.first(a.header());
      if (v != null) {
        if (found != null) {
          throw new S3Exception(S3Error.INVALID_REQUEST, "a request takes one checksum, not "
              + found.header() + " and " + a.header());
        }
        if (v.length() != a.base64Length() || !isBase64(v)) {
          throw new S3Exception(S3Error.INVALID_REQUEST, "the value of " + a.header() + " is "
              + "not a " + a + " checksum in base64: " + v);
        }
        found = a;
        value = v;
      }
    }
    if (headerChecksums) {
      for (String header : parts.headerNames()) {
        if (header.startsWith("x-amz-checksum-") && !NOT_CHECKSUMS.contains(header)
            && ChecksumAlgorithm.ofHeader(header).isEmpty()) {
          throw new S3Exception(S3Error.INVALID_REQUEST, header + " is not a checksum this "
              + "server checks: send one of " + Arrays.toString(ChecksumAlgorithm.values()));
        }
      }
    }
    String named = headerChecksums ? parts.first("x-amz-sdk-checksum-algorithm") : null;
    if (named != null && ChecksumAlgorithm.named(named).isEmpty()) {
      throw new S3Exception(S3Error.INVALID_REQUEST, "x-amz-sdk-checksum-algorithm names "
          + named + ", not a checksum this server checks");
    }
    if (found != null && named != null
        && ChecksumAlgorithm.named(named).orElse(null) != found) {
      throw new S3Exception(S3Error.INVALID_REQUEST, "x-amz-sdk-checksum-algorithm names "
          + named + ", and the request sends " + found.header());
    }
    this.headerAlgorithm = found;
    this.headerValue = value;
    this.headerChecksum = found == null ? null : found.start();
    if (payload.chunked()) {
      String trailer = parts.first("x-amz-trailer");
      ChecksumAlgorithm trailing = null;
      if (trailer != null) {
        trailing = ChecksumAlgorithm.ofHeader(trailer.toLowerCase(Locale.ROOT))
            .orElseThrow(() -> new S3Exception(S3Error.INVALID_ARGUMENT, "x-amz-trailer names "
                + trailer + ", not a checksum this server knows"));
      }
      this.decoder = new AwsChunkedDecoder(signed == null ? null : signed.chunks(),
          payload.trailerSigned(), trailing, length);
      this.trailingAlgorithm = trailing;
    } else {
      this.decoder = null;
      this.trailingAlgorithm = null;
    }
    String hash = payload == Payload.SIGNED
        ? signed != null ? signed.payloadSha256()
            : parts.first("x-amz-content-sha256").toLowerCase(Locale.ROOT)
        : null;
    this.signedSha256 = hash;
    this.sha256 = hash == null ? null : Hashes.newSha256();
    String md5 = parts.first("content-md5");
    this.contentMd5 = md5 == null ? null : contentMd5(md5);
    this.md5 = md5 == null ? null : Hashes.newMd5();
  }

  private static byte[] contentMd5(String value) throws S3Exception {
    try {
      byte[] digest = Base64.getDecoder().decode(value);
      if (digest.length == 16) {
        return digest;
      }
    } catch (IllegalArgumentException e) {
      // refused below
    }
    throw new S3Exception(S3Error.INVALID_DIGEST, "the Content-MD5 sent, \"" + value + "\", is "
        + "not the base64 of an MD5 digest (16 bytes)");
  }

  private static boolean isBase64(String v) {
    try {
      Base64.getDecoder().decode(v);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /** The body's bytes as the block's: decoded, checked, ending in an error if a check fails. */
  Flux<ByteBuf> decode(Flux<ByteBuf> received) {
    Flux<ByteBuf> bytes = decoder == null ? received : received.concatMap(this::decoded);
    return bytes.doOnNext(this::take).concatWith(Mono.defer(this::checked));
  }

  /** The CRC32C of the bytes taken. */
  int crc32c() {
    return (int) crc.getValue();
  }

  /**
   * The checksum the client sends with the body, kept with the object so that a GET returns it:
   * the one in a header, else the one its trailer will carry; null if it sends none.
   */
  ChecksumAlgorithm keptAlgorithm() {
    return headerAlgorithm != null ? headerAlgorithm : trailingAlgorithm;
  }

  /** The value of {@link #keptAlgorithm()}'s checksum, checked; known once the body has ended. */
  String keptChecksum() {
    return headerAlgorithm != null ? headerValue : trailingValue;
  }

  private Flux<ByteBuf> decoded(ByteBuf in) {
    List<ByteBuf> out = new ArrayList<>(2);
    try {
      int base = in.readerIndex();
      decoder.feed(in.nioBuffer(), (offset, length) ->
          out.add(in.retainedSlice(base + offset, length)));
      return Flux.fromIterable(out);
    } catch (S3Exception e) {
      out.forEach(ByteBuf::release);
      return Flux.error(e);
    } finally {
      in.release();
    }
  }

  private void take(ByteBuf b) {
    for (ByteBuffer piece : b.nioBuffers()) {
      crc.update(piece.duplicate());
      if (headerChecksum != null) {
        headerChecksum.update(piece);
      }
      if (sha256 != null) {
        sha256.update(piece.duplicate());
      }
      if (md5 != null) {
        md5.update(piece.duplicate());
      }
    }
  }

  private Mono<ByteBuf> checked() {
    try {
      if (decoder != null) {
        Map<String, String> trailer = decoder.finish();
        trailingValue = trailingAlgorithm == null ? null : trailer.get(trailingAlgorithm.header());
      }
      if (headerChecksum != null && !headerChecksum.base64().equals(headerValue)) {
        throw new S3Exception(S3Error.BAD_DIGEST, "the " + headerAlgorithm.header()
            + " of the body is " + headerChecksum.base64() + ", not the " + headerValue
            + " sent");
      }
      if (md5 != null) {
        byte[] got = md5.digest();
        if (!MessageDigest.isEqual(got, contentMd5)) {
          throw new S3Exception(S3Error.BAD_DIGEST, "the body's MD5 is "
              + Base64.getEncoder().encodeToString(got) + ", not the Content-MD5 sent, "
              + Base64.getEncoder().encodeToString(contentMd5));
        }
      }
      if (sha256 != null) {
        String got = HexFormat.of().formatHex(sha256.digest());
        if (!got.equals(signedSha256)) {
          throw new S3Exception(S3Error.X_AMZ_CONTENT_SHA256_MISMATCH, "the body's SHA-256 is "
              + got + ", not the " + signedSha256 + " signed");
        }
      }
      return Mono.empty();
    } catch (S3Exception e) {
      return Mono.error(e);
    }
  }
}
