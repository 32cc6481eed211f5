package dev.kvcache.server.http;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http2.Http2Connection;
import io.netty.handler.codec.http2.Http2ConnectionAdapter;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2LocalFlowController;
import io.netty.handler.codec.http2.Http2Stream;
import java.util.concurrent.TimeUnit;

/**
 * What becomes of a request body still arriving after its answer went out: an error answered from
 * the headers alone (413, 401, 403, 404, 400, ...), or an upload that failed on the way.
 *
 * <p>A body whose {@code Content-Length} says at most {@code drainLimit} bytes are still to come
 * is read and dropped, its flow-control window given back, so that the client can finish sending
 * and take the answer. A draining stream is reset once nothing arrived on it for {@value
 * #IDLE_MILLIS} ms (a slow sender, answered 408, is one), or {@value #DRAIN_PATIENCE_MILLIS} ms
 * after its answer. Any other stream is reset with {@code NO_ERROR} at once, which RFC 9113 §8.1
 * provides for asking a client to stop sending a body nobody will read. Without either, a client
 * keeps the rest of its body queued behind a window that never opens again. Some clients then wait
 * until they time out, or for ever: the JDK 17 {@code HttpClient} ignores a reset that follows a
 * complete answer (the JDK 25 one takes the answer with the reset), and draining gets it its
 * answer.
 */
final class UnreadBody extends RequestFrameStage {

  static final long IDLE_MILLIS = 1000;
  static final long DRAIN_PATIENCE_MILLIS = 10_000;

  private final Http2ConnectionHandler handler;
  private final ChannelHandlerContext ctx;
  private final long drainLimit;
  /** Body bytes announced and not yet arrived, for requests with a {@code Content-Length}. */
  private final Http2Connection.PropertyKey toCome;
  /** A {@link Drain}, on a stream whose answer went out while its body was still arriving. */
  private final Http2Connection.PropertyKey draining;
  /**
   * The stream whose last frame (the one ending it) is being handed on, or 0: an answer written
   * meanwhile leaves nothing to drain or reset.
   */
  private int ending;

  private UnreadBody(Http2ConnectionHandler handler, ChannelHandlerContext ctx, long drainLimit) {
    super(handler.decoder().frameListener());
    this.handler = handler;
    this.ctx = ctx;
    this.drainLimit = drainLimit;
    this.toCome = handler.connection().newKey();
    this.draining = handler.connection().newKey();
  }

  /**
   * Watches the streams of the connection {@code handler} serves, ahead of its frame listener.
   *
   * @param drainLimit the most body bytes still to come that are read and dropped rather than
   *     refused with a reset
   */
  static void install(Http2ConnectionHandler handler, ChannelHandlerContext handlerContext,
      long drainLimit) {
    UnreadBody unread = new UnreadBody(handler, handlerContext, drainLimit);
    handler.decoder().frameListener(unread);
    handler.connection().addListener(unread.new Answered());
  }

  @Override
  public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers,
      int streamDependency, short weight, boolean exclusive, int padding, boolean endOfStream)
      throws Http2Exception {
    headersRead(streamId, headers, endOfStream);
    ending = endOfStream ? streamId : 0;
    try {
      super.onHeadersRead(ctx, streamId, headers, streamDependency, weight, exclusive, padding,
          endOfStream);
    } finally {
      ending = 0;
    }
  }

  private void headersRead(int streamId, Http2Headers headers, boolean endOfStream) {
    Long length = endOfStream ? null : headers.getLong(HttpHeaderNames.CONTENT_LENGTH);
    Http2Stream stream = handler.connection().stream(streamId);
    if (length != null && stream != null) {
      stream.setProperty(toCome, length);
    }
  }

  @Override
  public int onDataRead(ChannelHandlerContext ctx, int streamId, ByteBuf data, int padding,
      boolean endOfStream) throws Http2Exception {
    Http2Stream stream = handler.connection().stream(streamId);
    Long left = stream == null ? null : stream.getProperty(toCome);
    if (left != null) {
      stream.setProperty(toCome, left - data.readableBytes());
      Drain drain = stream.getProperty(draining);
      if (drain != null) {
        drain.lastDataNanos = System.nanoTime();
        return data.readableBytes() + padding; // dropped, and its window given back
      }
    }
    ending = endOfStream ? streamId : 0;
    try {
      return super.onDataRead(ctx, streamId, data, padding, endOfStream);
    } finally {
      ending = 0;
    }
  }

  /** A body being read and dropped: when its answer went out, and when its last bytes came. */
  private static final class Drain {
    final long answeredNanos = System.nanoTime();
    long lastDataNanos = answeredNanos;
  }

  /** Resets a draining stream once it idles or drains too long; checked every idle period. */
  private void watch(Http2Stream stream, Drain drain) {
    ctx.executor().schedule(() -> {
      long now = System.nanoTime();
      if (now - drain.lastDataNanos >= TimeUnit.MILLISECONDS.toNanos(IDLE_MILLIS)
          || now - drain.answeredNanos >= TimeUnit.MILLISECONDS.toNanos(DRAIN_PATIENCE_MILLIS)) {
        reset(stream);
      } else if (stream.state() == Http2Stream.State.HALF_CLOSED_LOCAL) {
        watch(stream, drain);
      }
    }, IDLE_MILLIS, TimeUnit.MILLISECONDS);
  }

  /**
   * Widens a draining stream's window by the body bytes that arrived before the answer and are
   * still held, unread, by whoever answered: drained bytes alone might not reopen it.
   */
  private void reopen(Http2Stream stream) {
    if (stream.state() != Http2Stream.State.HALF_CLOSED_LOCAL) {
      return;
    }
    Http2LocalFlowController flow = handler.connection().local().flowController();
    int held = flow.unconsumedBytes(stream);
    if (held > 0) {
      try {
        flow.incrementWindowSize(stream, held);
        ctx.flush();
      } catch (Http2Exception e) {
        reset(stream);
      }
    }
  }

  /** Resets a stream that is still half-closed by its answer. */
  private void reset(Http2Stream stream) {
    if (stream.state() == Http2Stream.State.HALF_CLOSED_LOCAL) {
      handler.resetStream(ctx, stream.id(), Http2Error.NO_ERROR.code(), ctx.newPromise());
      ctx.flush();
    }
  }

  /** Decides, as each answer goes out before its request's body has all arrived. */
  private final class Answered extends Http2ConnectionAdapter {
    @Override
    public void onStreamHalfClosed(Http2Stream stream) {
      if (stream.state() != Http2Stream.State.HALF_CLOSED_LOCAL || stream.id() == ending) {
        // the request is complete, or is completed by the frame being read (an answer written
        // from its last frame, as most are): nothing is left to come
        return;
      }
      Long left = stream.getProperty(toCome);
      if (left != null && left >= 0 && left <= drainLimit) {
        Drain drain = new Drain();
        stream.setProperty(draining, drain);
        ctx.executor().execute(() -> reopen(stream));
        watch(stream, drain);
      } else {
        // the answer's last frame is written; reset after it, outside the writer's loop
        ctx.executor().execute(() -> reset(stream));
      }
    }
  }
}
