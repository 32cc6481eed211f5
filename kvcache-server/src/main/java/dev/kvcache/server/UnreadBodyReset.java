package dev.kvcache.server;

import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http2.Http2ConnectionAdapter;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2Stream;

/**
 * Resets with {@code NO_ERROR} an HTTP/2 stream whose answer went out before its request body was
 * all read: an error answered from the headers alone (413, 401, 403, 404, 400, ...). RFC 9113
 * §8.1 lets a server ask the client this way to stop sending a body nobody will read. Without the
 * reset a client keeps the rest of its body queued behind a flow-control window that is never
 * opened again, and some clients then wait for it until they time out instead of taking the
 * answer: the JDK 25 {@code HttpClient} did, and takes the answer with the reset. (The JDK 17
 * {@code HttpClient} ignores a reset that follows a complete answer and still waits.)
 */
final class UnreadBodyReset extends Http2ConnectionAdapter {

  private final Http2ConnectionHandler handler;
  private final ChannelHandlerContext ctx;

  private UnreadBodyReset(Http2ConnectionHandler handler, ChannelHandlerContext ctx) {
    this.handler = handler;
    this.ctx = ctx;
  }

  /** Watches the streams of the connection {@code handler} serves. */
  static void install(Http2ConnectionHandler handler, ChannelHandlerContext handlerContext) {
    handler.connection().addListener(new UnreadBodyReset(handler, handlerContext));
  }

  @Override
  public void onStreamHalfClosed(Http2Stream stream) {
    if (stream.state() != Http2Stream.State.HALF_CLOSED_LOCAL) {
      return; // the request is complete; the answer is still being written
    }
    // the answer's last frame is written; reset after it, outside the writer's loop
    ctx.executor().execute(() -> {
      if (stream.state() == Http2Stream.State.HALF_CLOSED_LOCAL) {
        handler.resetStream(ctx, stream.id(), Http2Error.NO_ERROR.code(), ctx.newPromise());
        ctx.flush();
      }
    });
  }
}
