package dev.kvcache.server.api;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.BlockWriter;
import dev.kvcache.CacheHealth;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.PutStatus;
import dev.kvcache.codec.BlockCodec;
import dev.kvcache.server.access.Access;
import dev.kvcache.server.access.Access.Right;
import dev.kvcache.server.access.Namespaces;
import dev.kvcache.server.errors.ApiError;
import dev.kvcache.server.errors.ApiException;
import dev.kvcache.server.events.EngineBlock;
import dev.kvcache.server.events.EngineBlocks;
import dev.kvcache.spi.Crc32c;
import dev.kvcache.tiered.KvCacheConfig;
import dev.kvcache.wire.Wire;
import io.micronaut.context.annotation.Value;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.http.HttpHeaders;
import io.micronaut.http.HttpMethod;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.MediaType;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Delete;
import io.micronaut.http.annotation.Get;
import io.micronaut.http.annotation.Put;
import io.micronaut.json.JsonMapper;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.netty.buffer.ByteBuf;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.function.UnaryOperator;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * One block by namespace and key: {@code PUT} stores the request body, {@code GET} answers it from
 * a lease ({@code HEAD}: whether it is there and how long), {@code DELETE} removes it.
 */
@Controller(Wire.NAMESPACES + "{namespace}/blocks/{key}")
public class BlockController {



  private static final String NOT_CACHED = "not-cached";

  private final KvCache cache;
  private final Namespaces namespaces;
  private final ServedBlocks served;
  private final int maxBlockBytes;
  private final Scheduler blocking;
  private final Duration bodyTimeout;
  private final WireCodec wire;
  private final JsonMapper json;
  private final OffLoop offLoop;
  private final EngineBlocks engineBlocks;

  BlockController(KvCache cache, KvCacheConfig config, Namespaces namespaces, WireCodec wire,
      @Value("${kvcache.body-timeout:60s}") Duration bodyTimeout, JsonMapper json,
      ServedBlocks served, OffLoop offLoop, EngineBlocks engineBlocks) {
    this.cache = cache;
    this.engineBlocks = engineBlocks;
    this.offLoop = offLoop;
    this.served = served;
    this.json = json;
    this.wire = wire;
    this.bodyTimeout = bodyTimeout;
    this.blocking = offLoop.scheduler();
    this.namespaces = namespaces;
    this.maxBlockBytes = config.maxBlockBytes();
  }

  /**
   * Stores the body, which streams in as it arrives. 201 when stored; 202 when the cache's policy
   * declined to keep it (a later GET misses); 408 when the body takes longer than {@code
   * kvcache.body-timeout}; 413 above the largest block; 507 when no room can be made (or, with
   * {@code durability: write_through}, the disk tier could not store the block); 400 {@code
   * bad-engine-block} when KV events are on and the {@code kvcache-engine-} headers do not name an
   * engine block ({@link EngineBlock#fromHeaders}). A body with
   * {@code Content-Encoding: kvcache-lz4} is a {@link WireCodec} container, stored decoded; any
   * other coding is 415.
   */
  @Access(Right.WRITE)
  @Put(consumes = MediaType.APPLICATION_OCTET_STREAM)
  Mono<HttpResponse<?>> put(HttpRequest<?> request, String namespace, String key,
      @Body @Nullable Publisher<ByteBuf> streamed) {
    if (request.getContentType().isEmpty()) {
      throw new ApiException(HttpStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported-media-type",
          "a PUT's body needs Content-Type: application/octet-stream");
    }
    BlockKey storageKey = namespaces.storageKey(namespace, key);
    long declared = request.getContentLength();
    boolean encoded = WireCodec.isEncoded(request.getHeaders().get(HttpHeaders.CONTENT_ENCODING));
    if (declared > (encoded ? BlockCodec.maxContainerLength(maxBlockBytes) : maxBlockBytes)) {
      throw tooLarge(declared);
    }
    ApiException badHeader = null;
    Integer checksum = null;
    EngineBlock named = null;
    try {
      checksum = checksum(request.getHeaders().get(Wire.CHECKSUM));
      named = engineBlocks.named(request.getHeaders()::get);
    } catch (ApiException e) {
      badHeader = e;
    } catch (IllegalArgumentException e) {
      badHeader = new ApiException(HttpStatus.BAD_REQUEST, "bad-engine-block", e.getMessage());
    }
    EngineBlock tagged = named;
    UnaryOperator<BlockWriter> tag = writer -> engineBlocks.tag(writer, tagged);
    if (streamed == null) {
      // no body at all (a length of 0, or an HTTP/2 request that ended with its headers), which
      // Micronaut would refuse as a missing argument: answered as an empty body is
      throw badHeader != null ? badHeader : BodyWriter.emptyBlock();
    }
    Publisher<ByteBuf> body = RequestBody.of(streamed);
    // a malformed checksum is answered once the body is read, as a mismatched one is: over
    // HTTP/1.1 an answer sent while the client still sends can be lost to the connection's reset
    ApiException refused = badHeader;
    Mono<PutStatus> stored = refused != null
        ? Flux.from(body).doOnNext(ByteBuf::release).then(Mono.error(refused))
        : encoded
        ? BodyWriter.storeEncoded(cache, storageKey, body, maxBlockBytes, blocking, checksum, tag)
            .doOnNext(done -> wire.received())
        : BodyWriter.store(cache, storageKey, body, declared, maxBlockBytes, blocking, checksum,
            tag);
    return Mono.firstWithSignal(stored, RequestBody.connectionClosed(request))
        .timeout(bodyTimeout, Mono.error(() -> new ApiException(HttpStatus.REQUEST_TIMEOUT,
            "body-timeout", "the body did not arrive within " + bodyTimeout.toMillis() + " ms")))
        .onErrorMap(e -> !(e instanceof ApiException), e -> new ApiException(
            HttpStatus.BAD_REQUEST, "body-aborted", "the body did not arrive whole: " + e))
        .map(status -> answer(status, declared));
  }

  /** The checksum a PUT's {@value Wire#CHECKSUM} gives, or null without one. */
  static Integer checksum(String header) {
    try {
      return header == null ? null : Wire.checksum(header);
    } catch (IllegalArgumentException e) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-checksum", e.getMessage());
    }
  }

  private HttpResponse<?> answer(PutStatus status, long length) {
    switch (status) {
      case STORED:
        return HttpResponse.status(HttpStatus.CREATED).header(Wire.PUT_STATUS, "stored");
      case NOT_ADMITTED:
        return HttpResponse.status(HttpStatus.ACCEPTED).header(Wire.PUT_STATUS, "not-admitted");
      case REJECTED_TOO_LARGE:
        throw tooLarge(length);
      case REJECTED_NO_SPACE:
        throw new ApiException(HttpStatus.INSUFFICIENT_STORAGE, "no-space", noRoom(cache));
      case REJECTED_NOT_DURABLE:
        throw new ApiException(HttpStatus.INSUFFICIENT_STORAGE, NOT_DURABLE, notDurable(cache));
      default:
        throw new IllegalStateException("unexpected put status " + status);
    }
  }

  /** The error code of a PUT refused because it could not be kept as durably as promised. */
  public static final String NOT_DURABLE = "not-durable";

  /** Why a PUT was refused as {@link PutStatus#REJECTED_NOT_DURABLE}. */
  public static String notDurable(KvCache cache) {
    return "not stored: the block could not be written behind as the durability mode promises ("
        + String.join("; ", cache.health().problems()) + ")";
  }

  /**
   * Why a PUT found no room: the disk tier cannot store it (with {@code durability:
   * write_through}), or the cache's memory is held by open reads.
   */
  public static String noRoom(KvCache cache) {
    CacheHealth health = cache.health();
    return health.degraded()
        ? "no room for the block: " + String.join("; ", health.problems())
        : "no room for the block: the cache's memory is held by open reads; retry later";
  }

  private ApiException tooLarge(long length) {
    return new ApiException(HttpStatus.REQUEST_ENTITY_TOO_LARGE, "too-large",
        "a block of " + length + " bytes is larger than this server's largest, " + maxBlockBytes);
  }

  /**
   * The block's bytes, written to the socket from the cache's memory; 404 if it is not cached. A
   * {@code HEAD} is served by this route too, with the block's length in {@value Wire#BLOCK_LENGTH}.
   * Encoded as a {@link WireCodec} container, off the event loop, when the request accepts it and
   * the server is configured to. A block that RAM does not hold is read on a blocking thread
   * ({@link OffLoop}).
   */
  @Access(Right.READ)
  @Get(produces = MediaType.APPLICATION_OCTET_STREAM, consumes = MediaType.ALL)
  Mono<HttpResponse<?>> get(HttpRequest<?> request, String namespace, String key) {
    BlockKey storageKey = namespaces.storageKey(namespace, key);
    Optional<BlockLease> inMemory = cache.tryGet(storageKey);
    if (inMemory.isPresent()) {
      return Mono.just(answer(request, namespace, key, inMemory.get()));
    }
    return offLoop.onBlocking(() -> answer(request, namespace, key, cache.get(storageKey)));
  }

  /** The answer to a GET or HEAD from the block's lease (a hit or a miss), which it takes over. */
  private HttpResponse<?> answer(HttpRequest<?> request, String namespace, String key,
      BlockLease lease) {
    if (lease.status() != GetStatus.HIT) {
      lease.close();
      // answered, not thrown: a miss is common and an exception's handling costs a bean lookup
      MutableHttpResponse<ApiError> miss =
          ApiError.response(HttpStatus.NOT_FOUND, NOT_CACHED, notCachedMessage(namespace, key));
      if (request.getMethod() == HttpMethod.HEAD) {
        // the length the GET's body would have, which keeps an HTTP/1.1 connection open
        miss.header(HttpHeaders.CONTENT_LENGTH, Integer.toString(jsonLength(miss.body())));
      }
      return miss;
    }
    int length = lease.length();
    boolean head = request.getMethod() == HttpMethod.HEAD;
    OptionalInt crc = head ? lease.crc32c() : OptionalInt.of(Crc32c.of(lease));
    MutableHttpResponse<?> answer;
    if (head) {
      lease.close(); // the length, stated, keeps an HTTP/1.1 connection open
      answer = HttpResponse.ok().header(HttpHeaders.CONTENT_LENGTH, Integer.toString(length));
    } else if (wire.encodesFor(request)) {
      served.served(namespace, 1);
      answer = HttpResponse.ok(wire.encode(lease, blocking))
          .header(HttpHeaders.CONTENT_ENCODING, Wire.CODING)
          .header(HttpHeaders.VARY, HttpHeaders.ACCEPT_ENCODING);
    } else {
      answer = HttpResponse.ok((ByteBuf) served.getBody(namespace, lease));
    }
    return withBlockHeaders(answer, length, crc);
  }

  /**
   * {@code answer} with the headers of a block's answer: its length ({@value Wire#BLOCK_LENGTH}),
   * and its CRC32C ({@value Wire#CHECKSUM}) if given: every answer with a block's bytes gives it.
   */
  static MutableHttpResponse<?> withBlockHeaders(MutableHttpResponse<?> answer, int length,
      OptionalInt crc) {
    answer.header(Wire.BLOCK_LENGTH, Integer.toString(length));
    if (crc.isPresent()) {
      answer.header(Wire.CHECKSUM, Wire.checksum(crc.getAsInt()));
    }
    return answer;
  }

  /** 204 once the block is gone from every tier; 404 if it was not cached. */
  @Access(Right.WRITE)
  @Delete(consumes = MediaType.ALL)
  @ExecuteOn(TaskExecutors.BLOCKING)
  HttpResponse<?> delete(String namespace, String key) {
    if (!cache.delete(namespaces.storageKey(namespace, key))) {
      throw new ApiException(HttpStatus.NOT_FOUND, NOT_CACHED, notCachedMessage(namespace, key));
    }
    return HttpResponse.noContent();
  }

  private int jsonLength(ApiError error) {
    try {
      return json.writeValueAsBytes(error).length;
    } catch (IOException e) {
      throw new UncheckedIOException(e); // an ApiError always serializes
    }
  }

  private static String notCachedMessage(String namespace, String key) {
    return "no block " + key + " in namespace " + namespace;
  }
}
