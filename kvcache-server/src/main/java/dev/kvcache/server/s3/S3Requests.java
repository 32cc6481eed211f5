package dev.kvcache.server.s3;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.tiered.KvCacheConfig;
import dev.kvcache.Namespace;
import dev.kvcache.PutStatus;
import dev.kvcache.s3api.Operation;
import dev.kvcache.s3api.PercentEncoding;
import dev.kvcache.s3api.Route;
import dev.kvcache.s3api.S3Error;
import dev.kvcache.s3api.S3Exception;
import dev.kvcache.s3api.auth.Payload;
import dev.kvcache.s3api.auth.RequestParts;
import dev.kvcache.s3api.auth.SigV4Verifier;
import dev.kvcache.s3api.auth.Verified;
import dev.kvcache.s3api.xml.RequestXml;
import dev.kvcache.s3api.xml.S3Xml;
import dev.kvcache.server.access.Namespaces;
import dev.kvcache.server.access.TokenSettings;
import dev.kvcache.server.access.Tokens;
import dev.kvcache.server.api.BodyWriter;
import dev.kvcache.server.api.OffLoop;
import dev.kvcache.server.api.ServedBlocks;
import dev.kvcache.server.errors.ApiException;
import dev.kvcache.spi.Crc32c;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpHeaders;
import io.micronaut.http.HttpMethod;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.MediaType;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.ServerHttpRequest;
import io.netty.buffer.ByteBuf;
import jakarta.inject.Singleton;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * The S3 operations on the cache: an object is a block of the namespace its bucket names, stored
 * under a hash of its key ({@link #objectKey}), so that it is cached, spilled and evicted as any
 * block is. A request is signed with a token's access key and secret (SigV4) when
 * the server has tokens; without tokens, as on the server's own port, every caller may do
 * everything and signatures are not checked.
 */
@Singleton
@Requires(property = "kvcache.s3.port")
final class S3Requests {

  private final KvCache cache;
  private final Namespaces namespaces;
  private final Tokens tokens;
  private final SigV4Verifier verifier;
  private final Set<String> baseDomains;
  private final int maxBlockBytes;
  private final Scheduler blocking;
  private final OffLoop offLoop;
  private final ServedBlocks served;
  /** When the buckets, the server's namespaces, were made: its start. */
  private static final Instant STARTED = Instant.now();

  private final AtomicLong requestIds = new AtomicLong();
  private final String idPrefix = Long.toHexString(System.nanoTime() & 0xffffff);

  S3Requests(KvCache cache, KvCacheConfig config, Namespaces namespaces, Tokens tokens,
      S3Settings settings, OffLoop offLoop, ServedBlocks served) {
    this.cache = cache;
    this.namespaces = namespaces;
    this.tokens = tokens;
    this.verifier = new SigV4Verifier(key -> {
      TokenSettings t = tokens.byAccessKey(key);
      return t == null ? null : t.getSecret();
    }, Clock.systemUTC());
    this.baseDomains = Set.copyOf(settings.getBaseDomains());
    this.maxBlockBytes = config.maxBlockBytes();
    this.blocking = offLoop.scheduler();
    this.offLoop = offLoop;
    this.served = served;
  }

  /** The answer to {@code request}, as S3 gives it. */
  Publisher<MutableHttpResponse<?>> handle(ServerHttpRequest<?> request) {
    String id = idPrefix + "-" + Long.toHexString(requestIds.incrementAndGet());
    String resource = request.getUri().getRawPath();
    Mono<MutableHttpResponse<?>> answer;
    try {
      answer = route(request);
    } catch (S3Exception | RuntimeException e) {
      // refused from its headers: answered once its body is read and dropped, since over HTTP/1.1
      // an answer sent while the client still sends can be lost to the connection's reset
      MutableHttpResponse<?> refused = error(request, asS3(e), resource, id);
      answer = body(request).doOnNext(ByteBuf::release)
          .onErrorResume(ignored -> Mono.empty())
          .then(Mono.just(refused));
    }
    return answer
        .onErrorResume(e -> Mono.just(error(request, asS3(e), resource, id)))
        .map(a -> a.header("x-amz-request-id", id));
  }

  private Mono<MutableHttpResponse<?>> route(ServerHttpRequest<?> request) throws S3Exception {
    RequestParts parts = parts(request);
    Route route = Route.of(parts.method(), request.getHeaders().get(HttpHeaders.HOST),
        parts.rawPath(), PercentEncoding.queryParameters(parts.rawQuery()), baseDomains);
    Verified signed = tokens.enabled() ? verifier.verify(parts) : null;
    TokenSettings token = signed == null ? null : tokens.byAccessKey(signed.accessKey());
    if (route.operation() == Operation.LIST_BUCKETS) {
      request.byteBody().allowDiscard();
      return Mono.just(listBuckets(token));
    }
    Namespace namespace = namespaces.find(route.bucket()).orElseThrow(() -> new S3Exception(
        S3Error.NO_SUCH_BUCKET, "the bucket " + route.bucket() + " is not one of this server's "
        + "namespaces (kvcache.namespaces)"));
    if (token != null) {
      List<String> allowed = route.operation().writes() ? token.getWrite() : token.getRead();
      if (!allowed.contains(route.bucket())) {
        throw new S3Exception(S3Error.ACCESS_DENIED, "the access key " + token.getAccessKey()
            + " may not " + (route.operation().writes() ? "write" : "read") + " the bucket "
            + route.bucket());
      }
    }
    if (route.operation() != Operation.PUT_OBJECT
        && route.operation() != Operation.DELETE_OBJECTS) {
      request.byteBody().allowDiscard();
    }
    return switch (route.operation()) {
      case HEAD_BUCKET, CREATE_BUCKET -> Mono.just(HttpResponse.ok());
      case PUT_OBJECT -> put(request, parts, signed, objectKey(namespace, route.key()));
      case GET_OBJECT, HEAD_OBJECT -> get(request, route, objectKey(namespace, route.key()));
      case DELETE_OBJECTS -> deleteObjects(request, parts, signed, namespace);
      case DELETE_OBJECT -> {
        BlockKey key = objectKey(namespace, route.key());
        yield offLoop.answer(() -> {
          cache.delete(key);
          return HttpResponse.noContent();
        });
      }
      default -> throw new S3Exception(S3Error.NOT_IMPLEMENTED, route.operation().s3Name()
          + " is not served yet");
    };
  }

  private Mono<MutableHttpResponse<?>> put(ServerHttpRequest<?> request, RequestParts parts,
      Verified signed, BlockKey key) throws S3Exception {
    Payload payload = payload(parts, signed);
    long length;
    if (payload.chunked()) {
      String decoded = parts.first("x-amz-decoded-content-length");
      if (decoded == null) {
        throw new S3Exception(S3Error.INVALID_REQUEST, "an aws-chunked body needs "
            + "x-amz-decoded-content-length");
      }
      length = parseLength(decoded);
    } else {
      length = request.getContentLength();
      if (length < 0) {
        throw new S3Exception(S3Error.INVALID_REQUEST, "a PutObject needs Content-Length");
      }
    }
    if (length == 0) {
      throw new S3Exception(S3Error.NOT_IMPLEMENTED, "empty objects are not stored yet");
    }
    if (length > maxBlockBytes) {
      throw new S3Exception(S3Error.ENTITY_TOO_LARGE, "an object of " + length + " bytes is "
          + "larger than this server's largest block, " + maxBlockBytes + " bytes "
          + "(kvcache.cache.max-block-bytes)");
    }
    ObjectBody body = new ObjectBody(parts, payload, signed, length);
    return BodyWriter.store(cache, key, body.decode(body(request)), length, maxBlockBytes, blocking, null,
            UnaryOperator.identity())
        .flatMap(status -> stored(status, body.crc32c(), length));
  }

  /**
   * DeleteObjects: each key named in the body deleted, whether it was there or not; the body
   * checked as a PutObject's is (its checksum, its signed hash) before any key is deleted.
   */
  private Mono<MutableHttpResponse<?>> deleteObjects(ServerHttpRequest<?> request,
      RequestParts parts, Verified signed, Namespace namespace) throws S3Exception {
    long length = request.getContentLength();
    if (length < 1 || length > MAX_DELETE_BODY_BYTES) {
      throw new S3Exception(S3Error.MALFORMED_XML, "a DeleteObjects body is 1 to "
          + MAX_DELETE_BODY_BYTES + " bytes with its Content-Length, not " + length);
    }
    Payload payload = payload(parts, signed);
    ObjectBody body = new ObjectBody(parts, payload, signed, payload.chunked() ? -1 : length);
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
        .flatMap(out -> offLoop.answer(() -> {
          RequestXml.Delete delete = RequestXml.delete(out.toByteArray());
          for (String name : delete.keys()) {
            cache.delete(objectKey(namespace, name));
          }
          return HttpResponse.ok(S3Xml.deleted(delete.keys(), List.of(), delete.quiet())
              .getBytes(StandardCharsets.UTF_8)).contentType(MediaType.APPLICATION_XML_TYPE);
        }));
  }

  /** The largest DeleteObjects body taken: 1000 keys of 1024 bytes, escaped, and their XML. */
  private static final int MAX_DELETE_BODY_BYTES = 8 << 20;

  private static Payload payload(RequestParts parts, Verified signed) throws S3Exception {
    String contentSha256 = parts.first("x-amz-content-sha256");
    return signed != null ? signed.payload()
        : contentSha256 == null ? Payload.UNSIGNED : Payload.of(contentSha256);
  }

  private Mono<MutableHttpResponse<?>> stored(PutStatus status, int crc32c, long length) {
    return switch (status) {
      case STORED, NOT_ADMITTED -> Mono.just(HttpResponse.ok()
          .header(HttpHeaders.ETAG, etag(crc32c, length)));
      case REJECTED_TOO_LARGE -> Mono.error(new S3Exception(S3Error.ENTITY_TOO_LARGE,
          "an object of " + length + " bytes is larger than the cache's largest block"));
      case REJECTED_NO_SPACE, REJECTED_NOT_DURABLE -> Mono.error(
          new S3Exception(S3Error.SLOW_DOWN, "the object was not stored: no room for it now ("
              + String.join("; ", cache.health().problems()) + ")"));
    };
  }

  private Mono<MutableHttpResponse<?>> get(ServerHttpRequest<?> request, Route route,
      BlockKey key) {
    boolean head = request.getMethod() == HttpMethod.HEAD;
    String range = request.getHeaders().get("Range");
    return offLoop.answer(() -> {
      BlockLease lease = cache.get(key);
      if (lease.status() != GetStatus.HIT) {
        lease.close();
        return error(request, new S3Exception(S3Error.NO_SUCH_KEY, "no object " + route.key()
            + " in " + route.bucket() + ": never stored, deleted, or evicted from the cache"),
            request.getUri().getRawPath(), null);
      }
      int length = lease.length();
      int crc = lease.crc32c().isPresent() ? lease.crc32c().getAsInt() : Crc32c.of(lease);
      String etag = etag(crc, length);
      String ifMatch = request.getHeaders().get("If-Match");
      if (ifMatch != null && !ifMatch.equals("*") && !ifMatch.equals(etag)) {
        lease.close();
        return error(request, new S3Exception(S3Error.PRECONDITION_FAILED, "the object's ETag is "
            + etag + ", not " + ifMatch), request.getUri().getRawPath(), null);
      }
      long[] span;
      try {
        span = range == null ? null : ByteRange.parse(range, length);
      } catch (S3Exception e) {
        lease.close();
        throw e;
      }
      MutableHttpResponse<?> answer;
      if (head) {
        lease.close();
        answer = HttpResponse.ok().header(HttpHeaders.CONTENT_LENGTH,
            Long.toString(span == null ? length : span[1] - span[0]));
      } else {
        ByteBuf whole = served.getBody(route.bucket(), lease);
        ByteBuf body = whole;
        if (span != null) {
          body = whole.retainedSlice((int) span[0], (int) (span[1] - span[0]));
          whole.release();
        }
        answer = HttpResponse.ok(body);
      }
      if (span != null) {
        answer.status(HttpStatus.PARTIAL_CONTENT).header("Content-Range",
            "bytes " + span[0] + "-" + (span[1] - 1) + "/" + length);
      }
      return answer.header(HttpHeaders.ETAG, etag).header("Accept-Ranges", "bytes")
          .contentType(MediaType.APPLICATION_OCTET_STREAM_TYPE);
    });
  }

  private MutableHttpResponse<?> listBuckets(TokenSettings token) {
    List<S3Xml.ListedBucket> buckets = new ArrayList<>();
    for (String name : namespaces.names().stream().sorted().toList()) {
      if (token == null || token.getRead().contains(name) || token.getWrite().contains(name)) {
        buckets.add(new S3Xml.ListedBucket(name, STARTED));
      }
    }
    return HttpResponse.ok(S3Xml.buckets("kvcache", buckets))
        .contentType(MediaType.APPLICATION_XML_TYPE);
  }

  /**
   * The block an object is: under a SHA-256 of its name (a domain of its own, apart from the
   * keys of the server's own API), in its bucket's namespace.
   */
  static BlockKey objectKey(Namespace namespace, String name) {
    try {
      MessageDigest d = MessageDigest.getInstance("SHA-256");
      d.update(OBJECT_DOMAIN);
      return BlockKey.ofRaw(namespace, d.digest(name.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-256", e);
    }
  }

  private static final byte[] OBJECT_DOMAIN =
      "kvcache S3 object\0".getBytes(StandardCharsets.US_ASCII);

  /** An object's ETag: its CRC32C and length in hex, quoted. */
  static String etag(int crc32c, long length) {
    return "\"" + String.format(Locale.ROOT, "%08x", crc32c) + Long.toHexString(length) + "\"";
  }

  private static MutableHttpResponse<?> error(ServerHttpRequest<?> request, S3Exception e,
      String resource, String id) {
    MutableHttpResponse<?> r = HttpResponse.status(HttpStatus.valueOf(e.error().status()));
    if (request.getMethod() == HttpMethod.HEAD) {
      return r.header(HttpHeaders.CONTENT_LENGTH, "0");
    }
    byte[] xml = S3Xml.error(e.error(), e.getMessage(), resource, id)
        .getBytes(StandardCharsets.UTF_8);
    return r.body(xml).contentType(MediaType.APPLICATION_XML_TYPE);
  }

  /** What S3 would answer for {@code e}: itself, or the server's error in S3's terms. */
  private static S3Exception asS3(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null && !(t instanceof S3Exception)) {
      t = t.getCause();
    }
    if (t instanceof S3Exception s3) {
      return s3;
    }
    if (e instanceof ApiException api && api.status().getCode() < 500) {
      return new S3Exception(S3Error.INCOMPLETE_BODY, api.getMessage());
    }
    return new S3Exception(S3Error.INTERNAL_ERROR, String.valueOf(e.getMessage()));
  }

  private static long parseLength(String text) throws S3Exception {
    try {
      long v = Long.parseLong(text.strip());
      if (v < 0) {
        throw new NumberFormatException();
      }
      return v;
    } catch (NumberFormatException e) {
      throw new S3Exception(S3Error.INVALID_ARGUMENT, "x-amz-decoded-content-length must be a "
          + "length, not " + text);
    }
  }

  /** The request's body as the Netty buffers it arrives in, each to be released by its taker. */
  private static Flux<ByteBuf> body(ServerHttpRequest<?> request) {
    return Flux.from(request.byteBody().toByteBufferPublisher())
        .map(b -> (ByteBuf) b.asNativeBuffer());
  }

  private static RequestParts parts(ServerHttpRequest<?> request) {
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
      public List<String> header(String name) {
        return request.getHeaders().getAll(name);
      }
    };
  }
}
