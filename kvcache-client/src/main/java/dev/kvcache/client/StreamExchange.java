package dev.kvcache.client;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2ResetFrame;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One request's HTTP/2 stream: feeds the answer's frames to a {@link ResponseSink} and completes
 * with the status. Once {@link #abandon()} returns (the caller gave up), the sink is never called
 * again, so a late frame cannot write into a buffer the caller has taken back.
 */
final class StreamExchange extends ChannelInboundHandlerAdapter {

  final CompletableFuture<Integer> done = new CompletableFuture<>();
  /** Completes once the request body (which wraps the caller's buffer) is no longer read. */
  private final CompletableFuture<Void> bodyReleased = new CompletableFuture<>();
  private final ResponseSink sink;
  private volatile Channel stream;
  private boolean abandoned;
  private int status;

  StreamExchange(ResponseSink sink, boolean hasBody) {
    this.sink = sink;
    if (!hasBody) {
      bodyReleased.complete(null);
    }
  }

  /**
   * The stream is open; on the event loop, before anything is written to it.
   *
   * @return false if the caller gave up meanwhile: the stream is closed, the body not to be sent
   */
  boolean started(Channel stream) {
    synchronized (this) {
      if (!abandoned) {
        this.stream = stream;
        return true;
      }
    }
    stream.close();
    bodyReleased.complete(null);
    return false;
  }

  /** The stream could not be opened; the body was released. */
  void failedToStart(Throwable cause) {
    bodyReleased.complete(null);
    done.completeExceptionally(cause);
  }

  /** The write of the request body, which ends the body's use once it completes either way. */
  void bodyWritten(ChannelFuture write) {
    write.addListener(f -> {
      if (!f.isSuccess()) {
        done.completeExceptionally(f.cause());
      }
      bodyReleased.complete(null);
    });
  }

  /**
   * Waits until the request body, which wraps the caller's buffer, is written or has failed, so
   * that the caller may change its buffer afterwards. A write stuck behind a full socket longer
   * than {@code patienceMillis} is failed by closing the connection.
   */
  void awaitBodyReleased(long patienceMillis) {
    try {
      bodyReleased.get(patienceMillis, TimeUnit.MILLISECONDS);
      return;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (TimeoutException | ExecutionException e) {
      // given up on below
    }
    Channel s = stream;
    if (s != null) {
      s.parent().close();
    }
    bodyReleased.join(); // the write fails once its connection is closed
  }

  /**
   * Stops feeding the sink and resets the stream, or keeps it from being opened.
   *
   * @return true if the exchange had already completed normally (its result stands)
   */
  boolean abandon() {
    boolean completed;
    synchronized (this) {
      abandoned = true;
      completed = done.isDone() && !done.isCompletedExceptionally();
    }
    Channel s = stream;
    if (s != null) {
      s.close();
    }
    return completed;
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    try {
      if (msg instanceof Http2HeadersFrame) {
        onHeaders(ctx, (Http2HeadersFrame) msg);
      } else if (msg instanceof Http2DataFrame) {
        Http2DataFrame data = (Http2DataFrame) msg;
        synchronized (this) {
          if (!abandoned) {
            sink.accept(data.content());
          }
        }
        if (data.isEndStream()) {
          finish(ctx);
        }
      } else if (msg instanceof Http2ResetFrame) {
        fail(ctx, new IOException("the server reset the stream: "
            + ((Http2ResetFrame) msg).errorCode()));
      }
    } catch (RuntimeException e) {
      fail(ctx, e);
    } finally {
      ReferenceCountUtil.release(msg);
    }
  }

  private void onHeaders(ChannelHandlerContext ctx, Http2HeadersFrame frame) {
    int code = Integer.parseInt(frame.headers().status().toString());
    if (code >= 100 && code < 200) {
      return; // informational
    }
    boolean go;
    synchronized (this) {
      if (abandoned) {
        return;
      }
      status = code;
      go = sink.begin(code, frame.headers());
    }
    if (!go) {
      done.complete(code);
      ctx.close();
    } else if (frame.isEndStream()) {
      finish(ctx);
    }
  }

  private void finish(ChannelHandlerContext ctx) {
    synchronized (this) {
      if (!abandoned) {
        sink.end();
      }
    }
    done.complete(status);
    ctx.close();
  }

  private void fail(ChannelHandlerContext ctx, Throwable cause) {
    done.completeExceptionally(cause);
    ctx.close();
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    if (!done.isDone()) { // every stream closes; only one closed early is a failure
      done.completeExceptionally(new IOException("the stream closed before its answer"));
    }
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    fail(ctx, cause);
  }
}
