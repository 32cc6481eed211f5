package dev.kvcache.server.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.Namespace;
import dev.kvcache.PrefixKeys;
import dev.kvcache.PrefixLocation;
import dev.kvcache.PrefixPin;
import dev.kvcache.server.access.Access;
import dev.kvcache.server.access.Access.Right;
import dev.kvcache.server.access.Namespaces;
import dev.kvcache.server.access.SameHost;
import dev.kvcache.server.errors.ApiException;
import dev.kvcache.server.events.EngineBlocks;
import dev.kvcache.spi.Crc32c;
import dev.kvcache.wire.Wire;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.MediaType;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Delete;
import io.micronaut.http.annotation.Get;
import io.micronaut.http.annotation.Post;
import io.micronaut.serde.annotation.Serdeable;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.math.BigInteger;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import reactor.core.publisher.Mono;

/**
 * Longest-prefix lookup: how many leading blocks of a request's chain are cached. A pinned lookup
 * also holds the blocks it found, under a lease id, until they are fetched through the lease, the
 * lease is released, or its time is up, so nothing evicts them between the lookup and the loads.
 */
@Controller(Wire.NAMESPACES + "{namespace}")
public class LookupController {

  /** The most keys one lookup takes: a 2M-token prompt in blocks of 512 tokens. */
  public static final int MAX_KEYS = 4096;

  /** The longest pin a lookup may ask for. */
  static final long MAX_PIN_MILLIS = 60_000;

  private final KvCache cache;
  private final Namespaces namespaces;
  private final PinRegistry pins;
  private final ServedBlocks served;
  private final OffLoop offLoop;
  private final EngineBlocks engineBlocks;
  private final SameHost sameHost;

  LookupController(KvCache cache, Namespaces namespaces, PinRegistry pins, ServedBlocks served,
      OffLoop offLoop, EngineBlocks engineBlocks, SameHost sameHost) {
    this.cache = cache;
    this.sameHost = sameHost;
    this.engineBlocks = engineBlocks;
    this.offLoop = offLoop;
    this.namespaces = namespaces;
    this.pins = pins;
    this.served = served;
  }

  /**
   * The blocks of a request, in chain order: by their keys, or by the prompt's tokens where the
   * keys come from tokens ({@code docs/keys.md}), as a router that holds only tokens asks.
   *
   * @param keys hex keys, at most {@value LookupController#MAX_KEYS}; or none, with {@code tokens}
   * @param tokens the prompt's token ids, whose every full block of {@code blockTokens} is a key
   *     derived under {@code keyNamespace}; a partial last block is left out
   * @param blockTokens with {@code tokens}: tokens per block
   * @param keyNamespace with {@code tokens}: the namespace the keys were derived under
   * @param engineHashes or the engine's hashes of the blocks, unsigned 64-bit, as PUTs named them
   *     ({@code kvcache-engine-hash}; with KV events on)
   * @param model with {@code engineHashes}: the model PUTs named
   * @param pinMillis if set, pin the blocks found for this long (at most 60 000 ms)
   * @param sharedMemory with a pin, whether to answer where each pinned block lies in shared
   *     memory, for a client on this host to copy from while the pin holds it
   */
  @Serdeable
  record LookupRequest(@Nullable List<String> keys, @Nullable List<Integer> tokens,
      @Nullable @JsonProperty("block_tokens") Integer blockTokens,
      @Nullable @JsonProperty("key_namespace") KeyNamespace keyNamespace,
      @Nullable @JsonProperty("engine_hashes") List<BigInteger> engineHashes,
      @Nullable String model,
      @Nullable @JsonProperty("pin_ms") Long pinMillis,
      @Nullable @JsonProperty("shared_memory") Boolean sharedMemory) {}

  /**
   * The namespace keys are derived under from tokens: the fields of a {@link Namespace}.
   *
   * @param tenant empty or absent for none
   */
  @Serdeable
  record KeyNamespace(@Nullable String model, @Nullable String dtype, @Nullable String layout,
      @Nullable String tenant) {}

  /**
   * The answer of a lookup.
   *
   * @param present how many leading keys are cached
   * @param tiers the runs of those blocks by the tier that holds them, in order
   * @param loadMicros the estimated time for the server to read them all, in microseconds; absent
   *     if a tier holding some has not timed a read yet
   * @param lease the id under which the blocks found are pinned, if a pin was asked for and a
   *     block found
   * @param expiresInMillis how long the pin holds
   * @param lengths the length in bytes of each block pinned, in order
   * @param sharedMemory if asked for by a client on this host and the RAM tier is in shared
   *     memory: where each pinned block lies there, in order (null for a block elsewhere, such as
   *     on disk)
   * @param copyToken if a client on this host asked for shared memory: the hex token it writes
   *     into a file of its own to have the server copy pinned blocks there ({@code local.LeaseCopies})
   */
  @Serdeable
  @JsonInclude(JsonInclude.Include.NON_NULL)
  public record LookupResponse(int present, List<TierRun> tiers,
      @Nullable @JsonProperty("load_us") Long loadMicros, @Nullable String lease,
      @Nullable @JsonProperty("expires_in_ms") Long expiresInMillis,
      @Nullable List<Integer> lengths,
      @Nullable @JsonProperty("shared_memory") List<SharedSlice> sharedMemory,
      @Nullable @JsonProperty("copy_token") String copyToken) {

    /** The answer for the blocks {@code location} finds, with no pin. */
    static LookupResponse of(PrefixLocation location) {
      return pinned(location, null, null, null, null, null);
    }

    /**
     * The answer for a pin of {@code lengths.size()} blocks, which {@code location} found where
     * they are (all of them, unless the cache dropped some from its index since: the pin still
     * holds those).
     */
    static LookupResponse pinned(PrefixLocation location, String lease, Long expiresInMillis,
        List<Integer> lengths, List<SharedSlice> sharedMemory, String copyToken) {
      List<TierRun> runs = new ArrayList<>(location.runs().size());
      for (PrefixLocation.Run run : location.runs()) {
        runs.add(new TierRun(run.tier(), run.blocks(), micros(run.estimatedLoad())));
      }
      int present = lengths == null ? location.blocks() : lengths.size();
      return new LookupResponse(present, runs, micros(location.estimatedLoad()), lease,
          expiresInMillis, lengths, sharedMemory, copyToken);
    }

    private static Long micros(Optional<Duration> estimate) {
      return estimate.map(d -> (d.toNanos() + 999) / 1000).orElse(null);
    }
  }

  /**
   * Consecutive leading blocks held by one tier.
   *
   * @param tier {@code ram}, {@code spill} (evicted from RAM, not yet on disk) or {@code disk}
   * @param blocks how many
   * @param loadMicros the estimated time to read them, in microseconds, from the tier's recent
   *     reads; absent if it has not timed one yet
   */
  @Serdeable
  @JsonInclude(JsonInclude.Include.NON_NULL)
  public record TierRun(String tier, int blocks, @Nullable @JsonProperty("load_us") Long loadMicros) {}

  /**
   * Where a pinned block lies in shared memory.
   *
   * @param file the path of the file to map, read-only
   * @param offset the block's first byte in it
   * @param length the block's length
   * @param crc32c the CRC32C of the block's bytes, as an unsigned 32-bit number: the client checks
   *     its copy against it
   */
  @Serdeable
  record SharedSlice(String file, long offset, int length, long crc32c) {}

  /**
   * Where the leading blocks of the keys are, pinned if the request asks; looked up on a blocking
   * thread if the cache's reads may wait (an object tier's lookup sends HEAD requests; {@link
   * OffLoop}).
   */
  @Access(Right.READ)
  @Post("/lookup")
  Mono<HttpResponse<LookupResponse>> lookup(HttpRequest<?> http, String namespace,
      @Body LookupRequest request) {
    return offLoop.answer(() -> HttpResponse.ok(answer(http, namespace, request)));
  }

  /** The hex keys a lookup by keys names: 1 to {@value #MAX_KEYS} of them. */
  private static List<String> clientKeys(LookupRequest request) {
    if (request.keys() == null || request.keys().isEmpty()) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-lookup",
          "the body needs a 'keys' list of 1 to " + MAX_KEYS + " keys, or 'tokens' with"
              + " 'block_tokens' and 'key_namespace', or 'engine_hashes' with 'model'");
    }
    if (request.keys().size() > MAX_KEYS) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-lookup",
          request.keys().size() + " keys; one lookup takes at most " + MAX_KEYS);
    }
    return request.keys();
  }

  /**
   * The keys of a lookup by tokens: those of each full block of its tokens, derived under its key
   * namespace as {@link PrefixKeys} derives them.
   */
  private static List<BlockKey> keysOfTokens(LookupRequest request) {
    if (request.keys() != null) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-lookup",
          "a lookup names its blocks by 'keys' or by 'tokens', not both");
    }
    Integer blockTokens = request.blockTokens();
    if (blockTokens == null || blockTokens < 1) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-lookup",
          "a lookup by tokens needs 'block_tokens', the tokens per block (1 or more)");
    }
    KeyNamespace kn = request.keyNamespace();
    if (kn == null) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-lookup", "a lookup by tokens needs"
          + " 'key_namespace' (model, dtype, layout and tenant the keys were derived under)");
    }
    Namespace keyNamespace;
    try {
      keyNamespace = Namespace.of(Objects.requireNonNullElse(kn.model(), ""),
          Objects.requireNonNullElse(kn.dtype(), ""), Objects.requireNonNullElse(kn.layout(), ""),
          Objects.requireNonNullElse(kn.tenant(), ""));
    } catch (IllegalArgumentException e) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-lookup",
          "key_namespace: " + e.getMessage());
    }
    List<Integer> tokens = request.tokens();
    if (tokens.size() / blockTokens > MAX_KEYS) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-lookup", tokens.size() / blockTokens
          + " blocks of tokens; one lookup takes at most " + MAX_KEYS);
    }
    if (tokens.size() < blockTokens) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-lookup", "'tokens' holds "
          + tokens.size() + " tokens, less than one block of " + blockTokens);
    }
    int[] ids = new int[tokens.size()];
    for (int i = 0; i < ids.length; i++) {
      Integer id = tokens.get(i);
      if (id == null) {
        throw new ApiException(HttpStatus.BAD_REQUEST, "bad-lookup", "token " + i + " is null");
      }
      ids[i] = id;
    }
    return PrefixKeys.of(keyNamespace, blockTokens).keysFor(ids);
  }

  /**
   * The keys of a lookup by engine hashes: those the PUTs that named the leading hashes stored
   * their blocks under, up to the first hash no PUT named (the prefix ends there).
   */
  private List<BlockKey> keysOfEngineHashes(String namespace, LookupRequest request) {
    if (request.keys() != null || request.tokens() != null) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-lookup",
          "a lookup names its blocks by 'keys', by 'tokens' or by 'engine_hashes', one of them");
    }
    if (!engineBlocks.enabled()) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-lookup", "a lookup by engine hashes"
          + " needs KV events on (kvcache.events.endpoint): the server keeps the engine hashes"
          + " PUTs name only then");
    }
    String model = request.model();
    if (model == null || model.isBlank()) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-lookup",
          "a lookup by engine hashes needs 'model', as the PUTs named it");
    }
    List<BigInteger> hashes = request.engineHashes();
    if (hashes.isEmpty() || hashes.size() > MAX_KEYS) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-lookup", "'engine_hashes' holds "
          + hashes.size() + " hashes; one lookup takes 1 to " + MAX_KEYS);
    }
    Namespace ns = namespaces.require(namespace);
    List<BlockKey> keys = new ArrayList<>(hashes.size());
    for (int i = 0; i < hashes.size(); i++) {
      BigInteger hash = hashes.get(i);
      if (hash == null || hash.signum() < 0 || hash.bitLength() > 64) {
        throw new ApiException(HttpStatus.BAD_REQUEST, "bad-lookup",
            "engine hash " + i + " is not an unsigned 64-bit number: " + hash);
      }
    }
    for (BigInteger hash : hashes) {
      BlockKey key = engineBlocks.keyOf(ns, model.trim(), hash.longValue());
      if (key == null) {
        break;
      }
      keys.add(key);
    }
    return keys;
  }

  /** The answer to a lookup, with its pin registered if it asks for one. */
  private LookupResponse answer(HttpRequest<?> http, String namespace, LookupRequest request) {
    List<BlockKey> keys = request.engineHashes() != null
        ? keysOfEngineHashes(namespace, request)
        : request.tokens() == null
        ? namespaces.storageKeys(namespace, clientKeys(request))
        : namespaces.storageKeysOf(namespace, keysOfTokens(request));
    if (keys.isEmpty()) {
      return LookupResponse.of(PrefixLocation.NONE);
    }
    Long pinMillis = request.pinMillis();
    if (pinMillis == null) {
      return LookupResponse.of(cache.locatePrefix(keys));
    }
    if (pinMillis < 1 || pinMillis > MAX_PIN_MILLIS) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-lookup",
          "pin_ms is " + pinMillis + "; it must be between 1 and " + MAX_PIN_MILLIS);
    }
    PrefixPin pin = cache.pinPrefix(keys, Duration.ofMillis(pinMillis));
    if (pin.blocks() == 0) {
      pin.close();
      return LookupResponse.of(PrefixLocation.NONE);
    }
    List<Integer> lengths = new ArrayList<>(pin.blocks());
    for (int i = 0; i < pin.blocks(); i++) {
      lengths.add(pin.length(i));
    }
    // only a client on this host can map this host's files, or have the server write into its own
    boolean local = Boolean.TRUE.equals(request.sharedMemory()) && sameHost.contains(http);
    List<SharedSlice> shared = local ? sharedSlices(namespace, pin) : null;
    // where the pinned blocks are: the pin holds them wherever they were found
    PrefixLocation location = cache.locatePrefix(keys.subList(0, pin.blocks()));
    PinRegistry.Entry lease = pins.register(namespace, pin, local);
    String token = local ? HexFormat.of().formatHex(lease.copyToken()) : null;
    return LookupResponse.pinned(location, lease.lease(), pinMillis, lengths, shared, token);
  }

  /**
   * Each pinned block's place in shared memory (null where it has none); null if none has one.
   * The blocks that have one count as served now: the client copies them itself, as a pinned
   * read's block is sent.
   */
  private List<SharedSlice> sharedSlices(String namespace, PrefixPin pin) {
    List<SharedSlice> slices = new ArrayList<>(pin.blocks());
    int found = 0;
    for (int i = 0; i < pin.blocks(); i++) {
      // a block kept without a checksum is sent through the socket, which computes one
      SharedSlice slice = pin.sharedMemory(i)
          .filter(s -> s.crc32c().isPresent())
          .map(s -> new SharedSlice(s.file().toString(), s.offset(), s.length(),
              Integer.toUnsignedLong(s.crc32c().getAsInt())))
          .orElse(null);
      found += slice != null ? 1 : 0;
      slices.add(slice);
    }
    served.served(namespace, found);
    return found > 0 ? slices : null;
  }

  /**
   * Block {@code index} of a pinned lookup, with its CRC32C; 404 once the
   * lease is released or expired. A block held in this process is sent from its own memory, which
   * the pin keeps until the body is sent, even if it is released or expires meanwhile. Answered
   * on a blocking thread if the cache's reads may wait ({@link OffLoop}).
   */
  @Access(Right.READ)
  @Get(uri = "/leases/{lease}/blocks/{index}", produces = MediaType.APPLICATION_OCTET_STREAM,
      consumes = MediaType.ALL)
  Mono<HttpResponse<?>> pinned(String namespace, String lease, int index) {
    return offLoop.answer(() -> pinnedBlock(namespace, lease, index));
  }

  private HttpResponse<?> pinnedBlock(String namespace, String lease, int index) {
    namespaces.require(namespace);
    PrefixPin pin = pins.find(namespace, lease).pin();
    if (index < 0 || index >= pin.blocks()) {
      throw new ApiException(HttpStatus.NOT_FOUND, "no-block",
          "lease " + lease + " holds blocks 0 to " + (pin.blocks() - 1) + ", not " + index);
    }
    int length = pin.length(index);
    Optional<BlockLease> shared = pin.share(index);
    if (shared.isPresent()) {
      // the block's own memory, written to the socket; the pin holds it until the body is sent
      BlockLease block = shared.get();
      return BlockController.withBlockHeaders(
          HttpResponse.ok((ByteBuf) served.pinnedBody(namespace, block)), length,
          OptionalInt.of(Crc32c.of(block)));
    }
    // a block the pin holds another way (a remote tier's), copied out
    ByteBuf body = ByteBufAllocator.DEFAULT.directBuffer(length, length);
    int crc;
    try {
      if (pin.getInto(index, body.nioBuffer(0, length)) != GetStatus.HIT) {
        throw new ApiException(HttpStatus.NOT_FOUND, "no-lease",
            "lease " + lease + " expired while the block was read");
      }
      body.writerIndex(length);
      // the tier checked the copy as it made it; this checksum covers the way to the client
      crc = Crc32c.of(body.nioBuffer(0, length));
    } catch (RuntimeException e) {
      body.release();
      throw e;
    }
    served.served(namespace, 1);
    return BlockController.withBlockHeaders(HttpResponse.ok(body), length, OptionalInt.of(crc));
  }

  /** Lets go of a pinned lookup's blocks before its time is up: 204, or 404 if not open. */
  @Access(Right.READ) // releasing a pin is part of reading
  @Delete(uri = "/leases/{lease}", consumes = MediaType.ALL)
  HttpResponse<?> release(String namespace, String lease) {
    namespaces.require(namespace);
    if (!pins.release(namespace, lease)) {
      throw new ApiException(HttpStatus.NOT_FOUND, "no-lease", "no open lease " + lease);
    }
    return HttpResponse.noContent();
  }
}
