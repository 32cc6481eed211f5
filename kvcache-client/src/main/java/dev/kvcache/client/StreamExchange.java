package dev.kvcache.client;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFuture;
import io.netty.handler.codec.http2.Http2Headers;
import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One request's HTTP/2 stream: feeds the answer's frames, handed over by its {@link
 * ClientConnection} on the event loop, to a {@link ResponseSink}, and completes with the status.
 * Once {@link #abandon()} returns (the caller gave up), the sink is never called again, so a late
 * frame cannot write into a buffer the caller has taken back.
 */
final class StreamExchange {

  final CompletableFuture<Integer> done = new CompletableFuture<>();
  /** Completes once the request body (which wraps the caller's buffer) is no longer read. */
  private final CompletableFuture<Void> bodyReleased = new CompletableFuture<>();
  private final ResponseSink sink;
  private volatile ClientConnection connection;
  private int streamId;
  private boolean abandoned;
  private int status;

  StreamExchange(ResponseSink sink, boolean hasBody) {
    this.sink = sink;
    if (!hasBody) {
      bodyReleased.complete(null);
    }
  }

  /**
   * The stream has its id; on the event loop, before anything is written to it.
   *
   * @return false if the caller gave up meanwhile: the stream is not to be opened
   */
  boolean started(ClientConnection connection, int streamId) {
    synchronized (this) {
      if (!abandoned) {
        this.streamId = streamId;
        this.connection = connection;
        return true;
      }
    }
    bodyReleased.complete(null);
    return false;
  }

  /** The stream's id; 0 until it is opened (on the event loop). */
  synchronized int streamId() {
    return streamId;
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
    ClientConnection c = connection;
    if (c != null) {
      c.channel().close();
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
    int id;
    synchronized (this) {
      abandoned = true;
      completed = done.isDone() && !done.isCompletedExceptionally();
      id = streamId;
    }
    ClientConnection c = connection;
    if (c != null && !completed) {
      c.channel().eventLoop().execute(() -> c.cancel(id));
    }
    return completed;
  }

  /**
   * The answer's headers; on the event loop.
   *
   * @return false to reset the stream: the answer is complete without its body
   */
  boolean headers(Http2Headers headers, boolean endOfStream) {
    try {
      int code = Integer.parseInt(headers.status().toString());
      if (code >= 100 && code < 200) {
        return true; // informational
      }
      boolean go;
      synchronized (this) {
        if (abandoned) {
          return false;
        }
        status = code;
        go = sink.begin(code, headers);
      }
      if (!go) {
        done.complete(code);
        return false;
      }
      if (endOfStream) {
        finish();
      }
      return true;
    } catch (RuntimeException e) {
      return fail(e);
    }
  }

  /**
   * Part of the answer's body; on the event loop. The connection releases it.
   *
   * @return false to reset the stream
   */
  boolean data(ByteBuf content, boolean endOfStream) {
    try {
      synchronized (this) {
        if (abandoned) {
          return false;
        }
        sink.accept(content);
      }
      if (endOfStream) {
        finish();
      }
      return true;
    } catch (RuntimeException e) {
      return fail(e);
    }
  }

  private void finish() {
    synchronized (this) {
      if (!abandoned) {
        sink.end();
      }
    }
    done.complete(status);
  }

  /**
   * The request failed: the server reset the stream, or its answer could not be taken.
   *
   * @return false, so that the stream is reset
   */
  boolean fail(Throwable cause) {
    done.completeExceptionally(cause);
    return false;
  }

  /** The stream closed; on the event loop. Every stream closes; only one closed early failed. */
  void closed() {
    if (!done.isDone()) {
      done.completeExceptionally(new IOException("the stream closed before its answer"));
    }
  }
}
