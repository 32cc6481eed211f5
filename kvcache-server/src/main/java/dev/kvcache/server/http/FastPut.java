package dev.kvcache.server.http;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockWriter;
import dev.kvcache.KvCache;
import dev.kvcache.PutStatus;
import dev.kvcache.server.access.Namespaces;
import dev.kvcache.server.access.TokenSettings;
import dev.kvcache.server.access.Tokens;
import dev.kvcache.server.api.BlockController;
import dev.kvcache.server.api.BodyWriter;
import dev.kvcache.server.errors.ApiError;
import dev.kvcache.server.errors.ApiException;
import dev.kvcache.server.events.EngineBlock;
import dev.kvcache.server.events.EngineBlocks;
import dev.kvcache.tiered.KvCacheConfig;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micronaut.context.annotation.Value;
import io.micronaut.json.JsonMapper;
import io.micronaut.scheduling.TaskExecutors;
import io.netty.util.AsciiString;
import io.netty.util.concurrent.EventExecutor;
import jakarta.inject.Named;
import jakarta.inject.Provider;
import jakarta.inject.Singleton;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * Stores a {@code PUT} of one block ahead of Micronaut, over HTTP/2 ({@link Http2PutListener},
 * from the frames) and HTTP/1.1 ({@link Http1Requests}, from the HTTP codec's messages): when
 * the request names its length ({@code Content-Length}) and the cache can open a writer for it at
 * once ({@link KvCache#tryWriter}: usually, RAM has room), each piece of the body is copied into
 * the block's place as it is read, and the block is committed when the body ends; answers and
 * errors are the controller's ({@link BlockController#put}). A body slower than {@code
 * kvcache.body-timeout} is answered 408; a body cut short (a reset stream, a closed connection)
 * drops what it had written and frees its room. Everything else goes to Micronaut: no length, a
 * chunked body, another content type or coding, a malformed checksum, a token that may not write
 * the namespace, a bad key, a block the cache cannot take at once (which then waits for room
 * there). A commit that may wait ({@link BlockWriter#tryCommit}: a write-behind backlog, a delete
 * on the disk tier, a lock another put holds) runs on the blocking executor, and its answer is
 * written back on the event loop: no put waits on an event loop, where it would stall every
 * connection it serves.
 *
 * <p>This class holds what the two protocols share: which requests are taken, the writer, the
 * checks of a whole body, the commit and the answer. Off with {@code kvcache.fast-put: false}.
 * Every PUT it answers, stored or refused, counts in {@code kvcache_fast_puts_total}: none of them
 * reaches Micronaut's {@code http_server_requests}.
 */
@Singleton
public class FastPut implements MeterBinder {

  private static final AsciiString OCTET_STREAM = AsciiString.cached("application/octet-stream");

  private final boolean enabled;
  private final KvCache cache;
  private final int maxBlockBytes;
  private final Namespaces namespaces;
  private final Tokens tokens;
  private final EngineBlocks engineBlocks;
  private final long timeoutNanos;
  private final JsonMapper json;
  /** Looked up on first use: this is a meter binder, and the executor's metrics need the meters. */
  private final Provider<ExecutorService> blocking;
  private final AtomicLong answered = new AtomicLong();

  FastPut(@Value("${kvcache.fast-put:true}") boolean enabled, KvCache cache, KvCacheConfig config,
      Namespaces namespaces, Tokens tokens, EngineBlocks engineBlocks,
      @Value("${kvcache.body-timeout:60s}") Duration bodyTimeout, JsonMapper json,
      @Named(TaskExecutors.BLOCKING) Provider<ExecutorService> blocking) {
    this.enabled = enabled;
    this.blocking = blocking;
    this.cache = cache;
    this.maxBlockBytes = config.maxBlockBytes();
    this.namespaces = namespaces;
    this.tokens = tokens;
    this.engineBlocks = engineBlocks;
    this.timeoutNanos = bodyTimeout.toNanos();
    this.json = json;
  }

  /** Whether PUTs are taken ahead of Micronaut ({@code kvcache.fast-put}). */
  boolean enabled() {
    return enabled;
  }

  /** PUTs answered here, stored or refused. */
  public long answered() {
    return answered.get();
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    FunctionCounter.builder("kvcache.fast.puts", answered, AtomicLong::get)
        .description("PUTs of blocks answered ahead of Micronaut's routing, stored or refused")
        .register(registry);
  }

  /** How long a body may take to arrive, in nanoseconds ({@code kvcache.body-timeout}). */
  long timeoutNanos() {
    return timeoutNanos;
  }

  /**
   * A writer for a request with these headers if the fast path takes it, else empty (and then
   * Micronaut answers it, with the error if there is one).
   *
   * @param encoded whether the request has a {@code Content-Encoding}
   * @param length its {@code Content-Length}, or null without one
   * @param headers its headers' values by name, for the engine block it names ({@link
   *     EngineBlocks#named})
   */
  Optional<BlockWriter> writerFor(CharSequence method, CharSequence contentType, boolean encoded,
      Long length, CharSequence path, CharSequence authorization,
      Function<String, String> headers) {
    if (!AsciiString.contentEquals("PUT", method)
        || !AsciiString.contentEqualsIgnoreCase(OCTET_STREAM, contentType) || encoded) {
      return Optional.empty();
    }
    String[] target = FastGet.blockPath(path);
    if (length == null || length < 1 || length > maxBlockBytes || target == null) {
      return Optional.empty();
    }
    if (tokens.enabled()) {
      TokenSettings token = tokens.bearer(authorization);
      if (token == null || !token.getWrite().contains(target[0])) {
        return Optional.empty();
      }
    }
    BlockKey key;
    EngineBlock named;
    try {
      key = namespaces.storageKey(target[0], target[1]);
      named = engineBlocks.named(headers);
    } catch (ApiException | IllegalArgumentException e) {
      return Optional.empty(); // Micronaut answers with the error
    }
    Optional<BlockWriter> writer = cache.tryWriter(key, length.intValue());
    if (writer.isPresent() && writer.get().rejection().isPresent()) {
      writer.get().close();
      return Optional.empty(); // Micronaut answers why
    }
    return writer.map(w -> engineBlocks.tag(w, named));
  }

  /** The answer to a whole body that is refused (short, or not its checksum), or null. */
  Reply refusal(BlockWriter writer, Integer checksum) {
    if (writer.remaining() != 0) {
      return error(400, "length-mismatch", "the body ended after "
          + (writer.length() - writer.remaining()) + " of its Content-Length's "
          + writer.length() + " bytes");
    }
    ApiException mismatch = BodyWriter.checksumMismatch(writer, checksum);
    return mismatch == null ? null
        : error(mismatch.status().getCode(), mismatch.code(), mismatch.getMessage());
  }

  /** The answer to a body longer than its {@code Content-Length}. */
  Reply tooLong(BlockWriter writer) {
    return error(400, "length-mismatch",
        "the body is longer than its Content-Length, " + writer.length() + " bytes");
  }

  /** The answer to a body that did not arrive in time. */
  Reply timedOut() {
    return error(408, "body-timeout",
        "the body did not arrive within " + timeoutNanos / 1_000_000 + " ms");
  }

  /**
   * Commits a whole body's writer and closes it, then hands the answer to {@code answer}: at once
   * if the commit need not wait, else from the blocking executor through {@code loop}.
   */
  void commit(BlockWriter writer, EventExecutor loop, Consumer<Reply> answer) {
    Optional<Committed> now = Committed.ifNoWait(writer);
    if (now.isPresent()) {
      answer.accept(reply(writer, now.get()));
      return;
    }
    blocking.get().execute(() -> {
      Committed committed = Committed.of(writer);
      loop.execute(() -> answer.accept(reply(writer, committed)));
    });
  }

  /** The answer to a commit's status, or to the exception it threw. */
  private Reply reply(BlockWriter writer, Committed committed) {
    if (committed.failure() != null) {
      return error(500, "internal", "the block could not be stored: " + committed.failure());
    }
    return switch (committed.status()) {
      case STORED -> stored(201, "stored");
      case NOT_ADMITTED -> stored(202, "not-admitted");
      case REJECTED_TOO_LARGE -> error(413, "too-large", "a block of " + writer.length()
          + " bytes is larger than this server's largest, " + maxBlockBytes);
      case REJECTED_NOT_DURABLE -> error(507, BlockController.NOT_DURABLE,
          BlockController.notDurable(cache));
      default -> error(507, "no-space", BlockController.noRoom(cache));
    };
  }

  private Reply stored(int status, String put) {
    answered.incrementAndGet();
    return new Reply(status, put, null);
  }

  private Reply error(int status, String code, String message) {
    answered.incrementAndGet();
    try {
      return new Reply(status, null, json.writeValueAsBytes(new ApiError(code, message)));
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a record of two strings always serializes
    }
  }

  /**
   * An answer: a stored block's status and {@code kvcache-put} header, or an error's status and
   * JSON body ({@link ApiError}).
   */
  record Reply(int status, String put, byte[] body) {}

  /** What a commit gave: its status, or the exception it threw. */
  private record Committed(PutStatus status, RuntimeException failure) {
    /** Commits and closes {@code writer}. */
    static Committed of(BlockWriter writer) {
      try (writer) {
        return new Committed(writer.commit(), null);
      } catch (RuntimeException e) {
        return new Committed(null, e);
      }
    }

    /** Commits and closes {@code writer} if that need not wait; empty, the writer open, if not. */
    static Optional<Committed> ifNoWait(BlockWriter writer) {
      Optional<PutStatus> status;
      try {
        status = writer.tryCommit();
      } catch (RuntimeException e) {
        writer.close();
        return Optional.of(new Committed(null, e));
      }
      if (status.isEmpty()) {
        return Optional.empty();
      }
      writer.close();
      return Optional.of(new Committed(status.get(), null));
    }
  }
}
