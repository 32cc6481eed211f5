package dev.kvcache.server;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import java.util.concurrent.TimeUnit;

/**
 * First in a connection's pipeline: a close waits until what was written to the connection has
 * gone out to the socket, for at most {@code limit}. On a graceful stop Micronaut closes an
 * HTTP/1.1 connection as soon as its last answer has been handed to Netty; an answer of megabytes
 * is then still in Netty's outbound buffer, waiting for its client to read, and a plain close would
 * drop it and cut the answer short. A connection that must go at once (the stop's grace period is
 * over) is closed by its event loop, which does not pass through here.
 */
final class FlushBeforeClose extends ChannelOutboundHandlerAdapter {

  private static final long POLL_MILLIS = 10;

  private final long limitNanos;

  FlushBeforeClose(long limitNanos) {
    this.limitNanos = limitNanos;
  }

  @Override
  public void close(ChannelHandlerContext ctx, ChannelPromise promise) {
    if (nothingPending(ctx)) {
      ctx.close(promise);
    } else {
      ctx.flush();
      closeWhenSent(ctx, promise, System.nanoTime() + limitNanos);
    }
  }

  private static void closeWhenSent(ChannelHandlerContext ctx, ChannelPromise promise, long deadline) {
    if (nothingPending(ctx) || System.nanoTime() - deadline >= 0) {
      ctx.close(promise);
    } else {
      ctx.executor().schedule(() -> closeWhenSent(ctx, promise, deadline), POLL_MILLIS,
          TimeUnit.MILLISECONDS);
    }
  }

  private static boolean nothingPending(ChannelHandlerContext ctx) {
    ChannelOutboundBuffer pending = ctx.channel().unsafe().outboundBuffer();
    return !ctx.channel().isActive() || pending == null || pending.totalPendingWriteBytes() == 0;
  }
}
