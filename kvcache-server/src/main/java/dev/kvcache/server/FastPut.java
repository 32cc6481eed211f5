package dev.kvcache.server;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockWriter;
import dev.kvcache.KvCache;
import dev.kvcache.KvCacheConfig;
import dev.kvcache.PutStatus;
import dev.kvcache.spi.Crc32c;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micronaut.context.annotation.Value;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.json.JsonMapper;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2ConnectionAdapter;
import io.netty.handler.codec.http2.Http2ConnectionEncoder;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2FrameListener;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Stream;
import io.netty.util.AsciiString;
import jakarta.inject.Named;
import jakarta.inject.Provider;
import jakarta.inject.Singleton;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Stores an HTTP/2 {@code PUT} of one block straight from the HTTP/2 frames, ahead of Micronaut:
 * when the request names its length ({@code content-length}) and the cache can open a writer for
 * it at once ({@link KvCache#tryWriter}: usually, RAM has room), each DATA frame is copied into the
 * block's place as it is read, and the block is committed when the stream ends; answers and errors
 * are the controller's ({@link BlockController#put}). A body longer or shorter than its length is
 * reset by Netty's HTTP/2 decoder, which checks DATA against {@code content-length} (the 400 here
 * is a second line of defence); one slower than {@code kvcache.body-timeout} is answered 408 and
 * reset; a reset or closed stream drops what it had written and frees its room. Everything else
 * goes to Micronaut: no length, another content type or coding, a token that may not write the
 * namespace, a bad key, a block the cache cannot take at once (which then waits for room there).
 * A request that expects {@code 100-continue} has had its {@code 100} from {@link ExpectContinue}.
 * A commit that may wait ({@link BlockWriter#tryCommit}: a write-behind backlog, a delete on
 * the disk tier, a lock another put holds) runs on the blocking executor, and its answer is
 * written back on the event loop: no put waits on an event loop, where it would stall every
 * connection it serves.
 * Off with {@code kvcache.fast-put: false}. Every PUT it answers, stored or refused (a checksum
 * that does not match, a body too slow), counts in {@code kvcache_fast_puts_total}: none of them
 * reaches Micronaut's {@code http_server_requests}.
 */
@Singleton
class FastPut implements MeterBinder {

  private static final AsciiString OCTET_STREAM = AsciiString.cached("application/octet-stream");
  private static final AsciiString JSON = AsciiString.cached("application/json");
  private static final AsciiString PUT_HEADER = AsciiString.cached("kvcache-put");
  private static final AsciiString CHECKSUM_HEADER = AsciiString.cached(Crc32c.HEADER);

  private final boolean enabled;
  private final KvCache cache;
  private final int maxBlockBytes;
  private final Namespaces namespaces;
  private final Tokens tokens;
  private final long timeoutNanos;
  private final JsonMapper json;
  /** Looked up on first use: this is a meter binder, and the executor's metrics need the meters. */
  private final Provider<ExecutorService> blocking;
  private final AtomicLong answered = new AtomicLong();

  FastPut(@Value("${kvcache.fast-put:true}") boolean enabled, KvCache cache, KvCacheConfig config,
      Namespaces namespaces, Tokens tokens,
      @Value("${kvcache.body-timeout:60s}") Duration bodyTimeout, JsonMapper json,
      @Named(TaskExecutors.BLOCKING) Provider<ExecutorService> blocking) {
    this.enabled = enabled;
    this.blocking = blocking;
    this.cache = cache;
    this.maxBlockBytes = config.maxBlockBytes();
    this.namespaces = namespaces;
    this.tokens = tokens;
    this.timeoutNanos = bodyTimeout.toNanos();
    this.json = json;
  }

  /** Puts the fast path in front of the connection's frame listener. */
  void install(Http2ConnectionHandler handler) {
    if (enabled) {
      Listener listener = new Listener(handler.decoder().frameListener(), handler);
      handler.decoder().frameListener(listener);
      handler.connection().addListener(new Http2ConnectionAdapter() {
        @Override
        public void onStreamClosed(Http2Stream stream) {
          listener.closed(stream.id());
        }
      });
    }
  }

  /** PUTs answered here, stored or refused. */
  long answered() {
    return answered.get();
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    FunctionCounter.builder("kvcache.fast.puts", answered, AtomicLong::get)
        .description("PUTs of blocks answered ahead of Micronaut's routing, stored or refused")
        .register(registry);
  }

  /** A writer for this request if the fast path takes it, else empty. */
  private Optional<BlockWriter> writerFor(Http2Headers headers) {
    if (!AsciiString.contentEquals("PUT", headers.method())
        || !AsciiString.contentEqualsIgnoreCase(OCTET_STREAM, headers.get(HttpHeaderNames.CONTENT_TYPE))
        || headers.contains(HttpHeaderNames.CONTENT_ENCODING)) {
      return Optional.empty();
    }
    Long length = headers.getLong(HttpHeaderNames.CONTENT_LENGTH);
    String[] target = FastGet.blockPath(headers.path());
    if (length == null || length < 1 || length > maxBlockBytes || target == null) {
      return Optional.empty();
    }
    if (tokens.enabled()) {
      TokenSettings token = tokens.bearer(headers.get(HttpHeaderNames.AUTHORIZATION));
      if (token == null || !token.getWrite().contains(target[0])) {
        return Optional.empty();
      }
    }
    BlockKey key;
    try {
      key = namespaces.storageKey(target[0], target[1]);
    } catch (ApiException e) {
      return Optional.empty(); // Micronaut answers with the error
    }
    Optional<BlockWriter> writer = cache.tryWriter(key, length.intValue());
    if (writer.isPresent() && writer.get().rejection().isPresent()) {
      writer.get().close();
      return Optional.empty(); // Micronaut answers why
    }
    return writer;
  }

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

  /** A body on its way into a writer, and the checksum its client sent (or null). */
  private static final class Upload {
    final BlockWriter writer;
    final Integer checksum;
    ScheduledFuture<?> timeout;

    Upload(BlockWriter writer, Integer checksum) {
      this.writer = writer;
      this.checksum = checksum;
    }
  }

  private final class Listener extends RequestFrameStage {
    private final Http2ConnectionHandler handler;
    private final Http2ConnectionEncoder encoder;
    /** The connection's uploads under way, by stream; used on its event loop only. */
    private final Map<Integer, Upload> uploads = new HashMap<>();

    Listener(Http2FrameListener next, Http2ConnectionHandler handler) {
      super(next);
      this.handler = handler;
      this.encoder = handler.encoder();
    }

    @Override
    public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers,
        int streamDependency, short weight, boolean exclusive, int padding, boolean endOfStream)
        throws Http2Exception {
      if (!headersRead(ctx, streamId, headers, endOfStream)) {
        super.onHeadersRead(ctx, streamId, headers, streamDependency, weight, exclusive, padding,
            endOfStream);
      }
    }

    /** Whether the headers (a request's, or an upload's trailers) are taken here. */
    private boolean headersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers,
        boolean endOfStream) {
      Upload upload = uploads.get(streamId);
      if (upload != null) { // trailers
        if (endOfStream) {
          finish(ctx, streamId, upload);
        }
        return true;
      }
      if (endOfStream) {
        return false;
      }
      CharSequence checksumHeader = headers.get(CHECKSUM_HEADER);
      Integer checksum;
      try {
        checksum = checksumHeader == null ? null : Crc32c.fromHeader(checksumHeader);
      } catch (IllegalArgumentException e) {
        return false; // Micronaut answers with the error
      }
      Optional<BlockWriter> writer = writerFor(headers);
      if (writer.isEmpty()) {
        return false;
      }
      Upload started = new Upload(writer.get(), checksum);
      started.timeout = ctx.executor().schedule(() -> fail(ctx, streamId, 408, "body-timeout",
          "the body did not arrive within " + timeoutNanos / 1_000_000 + " ms"),
          timeoutNanos, TimeUnit.NANOSECONDS);
      uploads.put(streamId, started);
      return true;
    }

    @Override
    public int onDataRead(ChannelHandlerContext ctx, int streamId, ByteBuf data, int padding,
        boolean endOfStream) throws Http2Exception {
      Upload upload = uploads.get(streamId);
      if (upload == null) {
        return super.onDataRead(ctx, streamId, data, padding, endOfStream);
      }
      int n = data.readableBytes();
      if (n > upload.writer.remaining()) {
        fail(ctx, streamId, 400, "length-mismatch",
            "the body is longer than its Content-Length, " + upload.writer.length() + " bytes");
        return n + padding;
      }
      // the frame's own NIO views: nioBuffer() of a composite would merge it first
      for (ByteBuffer part : data.nioBuffers()) {
        upload.writer.write(part);
      }
      if (endOfStream) {
        finish(ctx, streamId, upload);
      }
      return n + padding;
    }

    private void finish(ChannelHandlerContext ctx, int streamId, Upload upload) {
      BlockWriter writer = upload.writer;
      if (writer.remaining() != 0) {
        fail(ctx, streamId, 400, "length-mismatch", "the body ended after "
            + (writer.length() - writer.remaining()) + " of its Content-Length's "
            + writer.length() + " bytes");
        return;
      }
      ApiException mismatch = BodyWriter.checksumMismatch(writer, upload.checksum);
      if (mismatch != null) {
        fail(ctx, streamId, mismatch.status().getCode(), mismatch.code(), mismatch.getMessage());
        return;
      }
      uploads.remove(streamId);
      upload.timeout.cancel(false);
      Optional<Committed> now = Committed.ifNoWait(writer);
      if (now.isPresent()) {
        answer(ctx, streamId, writer, now.get());
        return;
      }
      blocking.get().execute(() -> {
        Committed committed = Committed.of(writer);
        ctx.executor().execute(() -> {
          answer(ctx, streamId, writer, committed);
          handler.flush(ctx); // not in a read: nothing else flushes it
        });
      });
    }

    /** Answers a commit's status, or the exception it threw. */
    private void answer(ChannelHandlerContext ctx, int streamId, BlockWriter writer,
        Committed committed) {
      if (committed.failure() != null) {
        respond(ctx, streamId, 500, "internal",
            "the block could not be stored: " + committed.failure());
        return;
      }
      switch (committed.status()) {
        case STORED -> respondStored(ctx, streamId, 201, "stored");
        case NOT_ADMITTED -> respondStored(ctx, streamId, 202, "not-admitted");
        case REJECTED_TOO_LARGE -> respond(ctx, streamId, 413, "too-large", "a block of "
            + writer.length() + " bytes is larger than this server's largest, " + maxBlockBytes);
        case REJECTED_NOT_DURABLE -> respond(ctx, streamId, 507, BlockController.NOT_DURABLE,
            BlockController.notDurable(cache));
        default -> respond(ctx, streamId, 507, "no-space", BlockController.noRoom(cache));
      }
      answered.incrementAndGet();
    }

    /**
     * Answers an upload that went wrong and drops its block; if the client is still sending, {@link
     * UnreadBody} drains or resets the stream after the answer.
     */
    private void fail(ChannelHandlerContext ctx, int streamId, int status, String code,
        String message) {
      Upload upload = uploads.remove(streamId);
      if (upload == null) {
        return; // done or closed meanwhile
      }
      upload.timeout.cancel(false);
      upload.writer.close();
      respond(ctx, streamId, status, code, message);
      answered.incrementAndGet();
      handler.flush(ctx);
    }

    /** The stream closed (reset, or the connection went): an upload under way is dropped. */
    void closed(int streamId) {
      Upload upload = uploads.remove(streamId);
      if (upload != null) {
        upload.timeout.cancel(false);
        upload.writer.close();
      }
    }

    private void respondStored(ChannelHandlerContext ctx, int streamId, int status, String put) {
      Http2Headers headers = new DefaultHttp2Headers(false, 4)
          .status(AsciiString.of(Integer.toString(status)))
          .add(PUT_HEADER, put)
          .add(HttpHeaderNames.CONTENT_LENGTH, "0")
          .add(HttpHeaderNames.DATE, HttpDate.now());
      encoder.writeHeaders(ctx, streamId, headers, 0, true, ctx.newPromise());
    }

    private void respond(ChannelHandlerContext ctx, int streamId, int status, String code,
        String message) {
      byte[] body;
      try {
        body = json.writeValueAsBytes(new ApiError(code, message));
      } catch (IOException e) {
        throw new UncheckedIOException(e); // a record of two strings always serializes
      }
      Http2Headers headers = new DefaultHttp2Headers(false, 4)
          .status(AsciiString.of(Integer.toString(status)))
          .add(HttpHeaderNames.CONTENT_TYPE, JSON)
          .add(HttpHeaderNames.CONTENT_LENGTH, Integer.toString(body.length))
          .add(HttpHeaderNames.DATE, HttpDate.now());
      encoder.writeHeaders(ctx, streamId, headers, 0, false, ctx.newPromise());
      encoder.writeData(ctx, streamId, Unpooled.wrappedBuffer(body), 0, true, ctx.newPromise());
    }
  }
}
