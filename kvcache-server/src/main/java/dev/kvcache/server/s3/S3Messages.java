package dev.kvcache.server.s3;

import dev.kvcache.s3api.S3Error;
import dev.kvcache.s3api.S3Exception;
import dev.kvcache.s3api.auth.Payload;
import dev.kvcache.s3api.auth.RequestParts;
import dev.kvcache.s3api.auth.Verified;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.MediaType;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.ServerHttpRequest;
import io.netty.buffer.ByteBuf;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** The parts of S3 requests and answers that every operation reads or writes alike. */
final class S3Messages {

  private S3Messages() {}

  /** The prefix of the headers that carry an object's own metadata. */
  static final String USER_METADATA = "x-amz-meta-";

  /** The request's body as the Netty buffers it arrives in, each to be released by its taker. */
  static Flux<ByteBuf> body(ServerHttpRequest<?> request) {
    return Flux.from(request.byteBody().toByteBufferPublisher())
        .map(b -> (ByteBuf) b.asNativeBuffer());
  }

  /** The request's body read and dropped, for an answer sent once the client has sent it all. */
  static Mono<Void> drain(ServerHttpRequest<?> request) {
    return body(request).doOnNext(ByteBuf::release).onErrorResume(ignored -> Mono.empty()).then();
  }

  /** How the request's payload is sent: as its signature says, or as its header says. */
  static Payload payload(RequestParts parts, Verified signed) throws S3Exception {
    String contentSha256 = parts.first("x-amz-content-sha256");
    return signed != null ? signed.payload()
        : contentSha256 == null ? Payload.UNSIGNED : Payload.of(contentSha256);
  }

  /**
   * The length of the object a body carries: its {@code x-amz-decoded-content-length} if it is
   * aws-chunked, else its {@code Content-Length}.
   */
  static long objectLength(ServerHttpRequest<?> request, RequestParts parts, Payload payload)
      throws S3Exception {
    if (payload.chunked()) {
      String decoded = parts.first("x-amz-decoded-content-length");
      if (decoded == null) {
        throw new S3Exception(S3Error.INVALID_REQUEST, "an aws-chunked body needs "
            + "x-amz-decoded-content-length");
      }
      try {
        long v = Long.parseLong(decoded.strip());
        if (v >= 0) {
          return v;
        }
      } catch (NumberFormatException e) {
        // refused below
      }
      throw new S3Exception(S3Error.INVALID_ARGUMENT, "x-amz-decoded-content-length must be a "
          + "length, not " + decoded);
    }
    long length = request.getContentLength();
    if (length < 0) {
      throw new S3Exception(S3Error.MISSING_CONTENT_LENGTH, "a body of an object or a part "
          + "needs its Content-Length");
    }
    return length;
  }

  /**
   * A body of XML (DeleteObjects, CompleteMultipartUpload), checked as an object's body is (its
   * signed hash, its trailing checksum, and its {@code x-amz-checksum-*} header if {@code
   * headerChecksums}), whole.
   */
  static Mono<byte[]> xmlBody(ServerHttpRequest<?> request, RequestParts parts, Verified signed,
      int maxBytes, boolean headerChecksums) throws S3Exception {
    long length = request.getContentLength();
    Payload payload = payload(parts, signed);
    long declared = payload.chunked() ? objectLength(request, parts, payload) : length;
    if (declared < 1 || declared > maxBytes) {
      throw new S3Exception(S3Error.MALFORMED_XML, "this request's body is XML of 1 to "
          + maxBytes + " bytes, with its length, not " + declared);
    }
    ObjectBody body = new ObjectBody(parts, payload, signed, payload.chunked() ? declared : -1,
        headerChecksums);
    return body.decode(body(request))
        .collect(ByteArrayOutputStream::new, (out, b) -> {
          try {
            byte[] bytes = new byte[b.readableBytes()];
            b.readBytes(bytes);
            out.write(bytes, 0, bytes.length);
          } finally {
            b.release();
          }
        })
        .map(ByteArrayOutputStream::toByteArray);
  }

  /**
   * The headers an object keeps from the request that stores it, by lower-case name: {@link
   * StoredObject#KEPT_HEADERS} ({@code Content-Encoding} without the {@code aws-chunked} of its
   * body's framing) and its own metadata, {@code x-amz-meta-*}.
   *
   * @throws S3Exception {@code MetadataTooLarge} past {@link StoredObject#MAX_USER_METADATA_BYTES}
   *     of metadata
   */
  static Map<String, String> objectHeaders(ServerHttpRequest<?> request) throws S3Exception {
    refuseObjectLock(request);
    String redirect = request.getHeaders().get("x-amz-website-redirect-location");
    if (redirect != null && !redirect.startsWith("/") && !redirect.startsWith("http://")
        && !redirect.startsWith("https://")) {
      throw new S3Exception(S3Error.INVALID_REDIRECT_LOCATION, "x-amz-website-redirect-location "
          + "is a path from /, or an http:// or https:// URL, not " + redirect);
    }
    Map<String, String> kept = new LinkedHashMap<>();
    int bytes = 0;
    for (String name : request.getHeaders().names()) {
      String lower = name.toLowerCase(Locale.ROOT);
      String value = String.join(",", request.getHeaders().getAll(name));
      if (lower.startsWith(USER_METADATA)) {
        kept.put(lower, value);
        bytes += lower.length() - USER_METADATA.length()
            + value.getBytes(StandardCharsets.UTF_8).length;
      } else if (lower.equals("content-encoding")) {
        String encoding = String.join(",", java.util.Arrays.stream(value.split(","))
            .map(String::strip).filter(e -> !e.isEmpty() && !e.equals("aws-chunked")).toList());
        if (!encoding.isEmpty()) {
          kept.put(lower, encoding);
        }
      } else if (StoredObject.KEPT_HEADERS.contains(lower)) {
        kept.put(lower, value);
      }
    }
    if (bytes > StoredObject.MAX_USER_METADATA_BYTES) {
      throw new S3Exception(S3Error.METADATA_TOO_LARGE, "the x-amz-meta-* headers have " + bytes
          + " bytes; an object keeps at most " + StoredObject.MAX_USER_METADATA_BYTES);
    }
    return kept;
  }

  /**
   * Refuses object-lock headers, as S3 refuses them on a bucket without object lock: their values
   * checked first ({@code InvalidArgument}), then {@code InvalidRequest}. A cache may drop any
   * object; it cannot promise to keep one.
   */
  private static void refuseObjectLock(ServerHttpRequest<?> request) throws S3Exception {
    String mode = request.getHeaders().get("x-amz-object-lock-mode");
    String until = request.getHeaders().get("x-amz-object-lock-retain-until-date");
    String hold = request.getHeaders().get("x-amz-object-lock-legal-hold");
    if (mode == null && until == null && hold == null) {
      return;
    }
    if (hold != null && !hold.equals("ON") && !hold.equals("OFF")) {
      throw new S3Exception(S3Error.INVALID_ARGUMENT, "x-amz-object-lock-legal-hold is ON or "
          + "OFF, not " + hold);
    }
    if (mode != null && !mode.equals("GOVERNANCE") && !mode.equals("COMPLIANCE")) {
      throw new S3Exception(S3Error.INVALID_ARGUMENT, "x-amz-object-lock-mode is GOVERNANCE or "
          + "COMPLIANCE, not " + mode);
    }
    if (until != null) {
      Instant date;
      try {
        date = OffsetDateTime.parse(until).toInstant();
      } catch (DateTimeParseException e) {
        throw new S3Exception(S3Error.INVALID_ARGUMENT, "x-amz-object-lock-retain-until-date is "
            + "an ISO 8601 date and time, not " + until);
      }
      if (!date.isAfter(Instant.now())) {
        throw new S3Exception(S3Error.INVALID_ARGUMENT, "x-amz-object-lock-retain-until-date "
            + until + " is in the past");
      }
    }
    if ((mode == null) != (until == null)) {
      throw new S3Exception(S3Error.INVALID_ARGUMENT, "x-amz-object-lock-mode and "
          + "x-amz-object-lock-retain-until-date go together");
    }
    throw new S3Exception(S3Error.INVALID_REQUEST, "Bucket is missing Object Lock Configuration: "
        + "a cache's buckets keep no object locks, since a cache may drop any object");
  }

  /** An answer of XML. */
  static MutableHttpResponse<?> xml(String xml) {
    return HttpResponse.ok(xml.getBytes(StandardCharsets.UTF_8))
        .contentType(MediaType.APPLICATION_XML_TYPE);
  }

  /** The request as the SigV4 verifier reads it. */
  static RequestParts parts(ServerHttpRequest<?> request) {
    String rawPath = request.getUri().getRawPath();
    String rawQuery = Optional.ofNullable(request.getUri().getRawQuery()).orElse("");
    return new RequestParts() {
      @Override
      public String method() {
        return request.getMethodName();
      }

      @Override
      public String rawPath() {
        return rawPath;
      }

      @Override
      public String rawQuery() {
        return rawQuery;
      }

      @Override
      public Collection<String> headerNames() {
        return request.getHeaders().names().stream().map(n -> n.toLowerCase(Locale.ROOT))
            .toList();
      }

      @Override
      public List<String> header(String name) {
        return request.getHeaders().getAll(name);
      }
    };
  }
}
