package dev.kvcache.server.s3;

import dev.kvcache.BlockKey;
import dev.kvcache.KvCache;
import dev.kvcache.tiered.KvCacheConfig;
import dev.kvcache.Namespace;
import dev.kvcache.s3api.Operation;
import dev.kvcache.s3api.PercentEncoding;
import dev.kvcache.s3api.Route;
import dev.kvcache.s3api.S3Error;
import dev.kvcache.s3api.S3Exception;
import dev.kvcache.s3api.auth.RequestParts;
import dev.kvcache.s3api.auth.SigV4Verifier;
import dev.kvcache.s3api.auth.Verified;
import dev.kvcache.s3api.xml.RequestXml;
import dev.kvcache.s3api.xml.S3Xml;
import dev.kvcache.server.access.Namespaces;
import dev.kvcache.server.access.TokenSettings;
import dev.kvcache.server.access.Tokens;
import dev.kvcache.server.api.OffLoop;
import dev.kvcache.server.api.ServedBlocks;
import dev.kvcache.server.errors.ApiException;
import io.micronaut.context.annotation.Requires;
import io.micronaut.http.HttpHeaders;
import io.micronaut.http.HttpMethod;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.MediaType;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.ServerHttpRequest;
import jakarta.inject.Singleton;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;

/**
 * The S3 API's requests: routed, their signatures and rights checked, answered by {@link
 * ObjectGets}, {@link ObjectPuts} or here, and their errors given as S3 gives them. An object is a
 * block of the namespace its bucket names ({@link StoredObject}), so that it is cached, spilled
 * and evicted as any block is. A request is signed with a token's access key and secret (SigV4) when
 * the server has tokens; without tokens, as on the server's own port, every caller may do
 * everything and signatures are not checked.
 */
@Singleton
@Requires(property = "kvcache.s3.enabled", notEquals = "false")
final class S3Requests {

  private final KvCache cache;
  private final Namespaces namespaces;
  private final Tokens tokens;
  private final SigV4Verifier verifier;
  private final Set<String> baseDomains;
  private final OffLoop offLoop;
  private final ObjectGets gets;
  private final ObjectPuts puts;
  private final ObjectNames names;
  private final S3Meters meters;
  /** When the buckets, the server's namespaces, were made: its start. */
  private static final Instant STARTED = Instant.now();

  private final AtomicLong requestIds = new AtomicLong();
  private final String idPrefix = Long.toHexString(System.nanoTime() & 0xffffff);

  S3Requests(KvCache cache, KvCacheConfig config, Namespaces namespaces, Tokens tokens,
      S3Settings settings, OffLoop offLoop, ServedBlocks served, ObjectNames names,
      S3Meters meters) {
    this.cache = cache;
    this.namespaces = namespaces;
    this.tokens = tokens;
    Clock clock = Clock.systemUTC();
    this.verifier = new SigV4Verifier(key -> {
      TokenSettings t = tokens.byAccessKey(key);
      return t == null ? null : t.getSecret();
    }, clock);
    this.baseDomains = Set.copyOf(settings.getBaseDomains());
    this.offLoop = offLoop;
    this.gets = new ObjectGets(cache, offLoop, served);
    this.puts = new ObjectPuts(cache, config.maxBlockBytes(), offLoop.scheduler(),
        new MultipartUploads(settings.multipartStagingBytes(), settings.getMultipartIdleTimeout(),
            clock), names, clock);
    this.names = names;
    this.meters = meters;
  }

  /** The answer to {@code request}, as S3 gives it. */
  Publisher<MutableHttpResponse<?>> handle(ServerHttpRequest<?> request) {
    long start = System.nanoTime();
    String id = idPrefix + "-" + Long.toHexString(requestIds.incrementAndGet());
    String resource = request.getUri().getRawPath();
    AtomicReference<Operation> operation = new AtomicReference<>();
    Mono<MutableHttpResponse<?>> answer;
    try {
      answer = route(request, operation);
    } catch (S3Exception | RuntimeException e) {
      // refused from its headers: answered once its body is read and dropped, since over HTTP/1.1
      // an answer sent while the client still sends can be lost to the connection's reset
      MutableHttpResponse<?> refused = error(request, asS3(e), resource, id);
      answer = S3Messages.drain(request).then(Mono.just(refused));
    }
    return answer
        .onErrorResume(e -> Mono.just(error(request, asS3(e), resource, id)))
        .map(a -> {
          meters.record(operation.get(), System.nanoTime() - start, a.code());
          return a.header("x-amz-request-id", id);
        });
  }

  private Mono<MutableHttpResponse<?>> route(ServerHttpRequest<?> request,
      AtomicReference<Operation> operation) throws S3Exception {
    RequestParts parts = S3Messages.parts(request);
    Route route = Route.of(parts.method(), request.getHeaders().get(HttpHeaders.HOST),
        parts.rawPath(), PercentEncoding.queryParameters(parts.rawQuery()), baseDomains);
    operation.set(route.operation());
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
    if (!TAKE_BODIES.contains(route.operation())) {
      request.byteBody().allowDiscard();
    }
    return switch (route.operation()) {
      // the credential's region is not checked: the region a client is told is S3's first
      case HEAD_BUCKET -> Mono.just(HttpResponse.ok().header("x-amz-bucket-region", "us-east-1"));
      case CREATE_BUCKET -> Mono.just(HttpResponse.ok().header("Location", "/" + route.bucket()));
      case DELETE_BUCKET -> {
        // a bucket is a namespace of the server's settings: it stays, and must be empty
        if (!names.bucket(route.bucket()).isEmpty()) {
          throw new S3Exception(S3Error.BUCKET_NOT_EMPTY, "the bucket " + route.bucket()
              + " holds objects; a bucket here is one of the server's namespaces, which stays");
        }
        yield Mono.just(HttpResponse.noContent());
      }
      case PUT_OBJECT -> puts.put(request, parts, signed, namespace, route.bucket(), route.key());
      case LIST_OBJECTS_V2 -> Mono.just(S3Messages.xml(ObjectListing.list(route.bucket(),
          names.bucket(route.bucket()), route.query())));
      case LIST_OBJECTS -> Mono.just(S3Messages.xml(ObjectListing.listVersion1(route.bucket(),
          names.bucket(route.bucket()), route.query())));
      case GET_OBJECT, HEAD_OBJECT -> gets.get(request, namespace, route);
      case DELETE_OBJECTS -> deleteObjects(request, parts, signed, namespace);
      case DELETE_OBJECT -> {
        BlockKey key = StoredObject.blockKey(namespace, route.key());
        yield offLoop.answer(() -> {
          cache.delete(key);
          return HttpResponse.noContent();
        });
      }
      case CREATE_MULTIPART_UPLOAD -> Mono.just(puts.create(request, route));
      case UPLOAD_PART -> puts.uploadPart(request, parts, signed, route);
      case COMPLETE_MULTIPART_UPLOAD -> puts.complete(request, parts, signed, namespace, route);
      case ABORT_MULTIPART_UPLOAD -> Mono.just(puts.abort(route));
      default -> throw new S3Exception(S3Error.NOT_IMPLEMENTED, route.operation().s3Name()
          + " is not served yet");
    };
  }

  /** The operations that read their request's body. */
  private static final Set<Operation> TAKE_BODIES = Set.of(Operation.PUT_OBJECT,
      Operation.DELETE_OBJECTS, Operation.UPLOAD_PART, Operation.COMPLETE_MULTIPART_UPLOAD);

  /**
   * DeleteObjects: each key named in the body deleted, whether it was there or not; the body
   * checked as a PutObject's is (its checksum, its signed hash) before any key is deleted.
   */
  private Mono<MutableHttpResponse<?>> deleteObjects(ServerHttpRequest<?> request,
      RequestParts parts, Verified signed, Namespace namespace) throws S3Exception {
    return S3Messages.xmlBody(request, parts, signed, MAX_DELETE_BODY_BYTES, true)
        .flatMap(xml -> offLoop.answer(() -> {
          RequestXml.Delete delete = RequestXml.delete(xml);
          for (String name : delete.keys()) {
            cache.delete(StoredObject.blockKey(namespace, name));
          }
          return S3Messages.xml(S3Xml.deleted(delete.keys(), List.of(), delete.quiet()));
        }));
  }

  /** The largest DeleteObjects body taken: 1000 keys of 1024 bytes, escaped, and their XML. */
  private static final int MAX_DELETE_BODY_BYTES = 8 << 20;

  private MutableHttpResponse<?> listBuckets(TokenSettings token) {
    List<S3Xml.ListedBucket> buckets = new ArrayList<>();
    for (String name : namespaces.names().stream().sorted().toList()) {
      if (token == null || token.getRead().contains(name) || token.getWrite().contains(name)) {
        buckets.add(new S3Xml.ListedBucket(name, STARTED));
      }
    }
    return S3Messages.xml(S3Xml.buckets("kvcache", buckets));
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
}
