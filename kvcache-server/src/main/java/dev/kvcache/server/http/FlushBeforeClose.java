package dev.kvcache.server.http;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.socket.DuplexChannel;
import io.netty.util.ReferenceCountUtil;
import java.util.concurrent.TimeUnit;

/**
 * First in a connection's pipeline: a close waits until what was written to the connection has
 * gone out to the socket, for at most {@code limit}. On a graceful stop Micronaut closes an
 * HTTP/1.1 connection as soon as its last answer has been handed to Netty; an answer of megabytes
 * is then still in Netty's outbound buffer, waiting for its client to read, and a plain close would
 * drop it and cut the answer short. A connection that must go at once (the stop's grace period is
 * over) is closed by its event loop, which does not pass through here.
 *
 * <p>Then the close lingers: the connection's sending side is shut (the client reads the whole
 * answer and its end), and what the client still sends is read and dropped until it closes its
 * side, for at most {@value #LINGER_MILLIS} ms. An HTTP/1.1 request refused before its body was
 * read (too large, damaged, not allowed) leaves the body's rest on its way; closing with unread
 * bytes would reset the connection, and a reset throws away the answer the client has not read
 * yet.
 */
final class FlushBeforeClose extends ChannelOutboundHandlerAdapter {

  private static final long POLL_MILLIS = 10;
  /** The longest a close waits for its client to stop sending. */
  static final long LINGER_MILLIS = 1000;

  private final long limitNanos;

  FlushBeforeClose(long limitNanos) {
    this.limitNanos = limitNanos;
  }

  @Override
  public void close(ChannelHandlerContext ctx, ChannelPromise promise) {
    if (nothingPending(ctx)) {
      lingerThenClose(ctx, promise);
    } else {
      ctx.flush();
      closeWhenSent(ctx, promise, System.nanoTime() + limitNanos);
    }
  }

  private static void closeWhenSent(ChannelHandlerContext ctx, ChannelPromise promise, long deadline) {
    if (nothingPending(ctx)) {
      lingerThenClose(ctx, promise);
    } else if (System.nanoTime() - deadline >= 0) {
      ctx.close(promise);
    } else {
      ctx.executor().schedule(() -> closeWhenSent(ctx, promise, deadline), POLL_MILLIS,
          TimeUnit.MILLISECONDS);
    }
  }

  /**
   * Shuts the sending side, drops what arrives until the client closes its side (then Netty closes
   * the connection) or the linger time is over (then this closes it).
   */
  private static void lingerThenClose(ChannelHandlerContext ctx, ChannelPromise promise) {
    Channel channel = ctx.channel();
    if (!(channel instanceof DuplexChannel duplex) || !channel.isActive()
        || duplex.isInputShutdown() || duplex.isOutputShutdown()) {
      ctx.close(promise);
      return;
    }
    channel.closeFuture().addListener(closed -> promise.trySuccess());
    channel.pipeline().addFirst(new DropInbound());
    channel.config().setAutoRead(true);
    duplex.shutdownOutput().addListener(shut -> {
      if (!shut.isSuccess()) {
        ctx.close(promise);
      }
    });
    ctx.executor().schedule(() -> {
      if (channel.isOpen()) {
        ctx.close(promise);
      }
    }, LINGER_MILLIS, TimeUnit.MILLISECONDS);
    ctx.read();
  }

  /** Reads and drops what a closing connection's client still sends. */
  private static final class DropInbound extends ChannelInboundHandlerAdapter {
    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      ReferenceCountUtil.release(msg);
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
      ctx.read();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      ctx.close();
    }
  }

  private static boolean nothingPending(ChannelHandlerContext ctx) {
    ChannelOutboundBuffer pending = ctx.channel().unsafe().outboundBuffer();
    return !ctx.channel().isActive() || pending == null || pending.totalPendingWriteBytes() == 0;
  }
}
