package dev.kvcache.client;

import dev.kvcache.wire.Wire;
import io.netty.buffer.ByteBuf;
import java.io.IOException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One request to one server: started, then waited for, so that several can be under way. It waits
 * at most the request timeout; a read that fails is tried once more on a fresh connection (a
 * write never is), and a server that failed is left alone for its back-off ({@link
 * ServerLink#failed}).
 */
final class RemoteCall {

  private static final Logger log = LoggerFactory.getLogger(RemoteCall.class);
  /** The status of a call that got no answer: the server is down, or did not answer in time. */
  static final int UNREACHABLE = -1;
  private static final long BODY_PATIENCE_MILLIS = 1000;

  private final Requests requests;
  private final ServerLink link;
  private final String method;
  private final String path;
  private final ByteBuf body;
  private final String coding;
  private final Supplier<ResponseSink> sinks;
  private String checksum;
  private boolean retryLeft;
  private StreamExchange exchange;

  /**
   * @param body the request body, released once the call is waited for; or null
   * @param coding the body's content coding, or for a GET the coding its answer may come in
   * @param retryOnce whether a failed exchange is tried once more (reads only)
   */
  RemoteCall(Requests requests, ServerLink link, String method, String path, ByteBuf body,
      String coding, Supplier<ResponseSink> sinks, boolean retryOnce) {
    this.requests = requests;
    this.link = link;
    this.method = method;
    this.path = path;
    this.body = body;
    this.coding = coding;
    this.sinks = sinks;
    this.retryLeft = retryOnce;
  }

  /** A call whose stream was started by a {@link BodyStream}'s sender: never retried. */
  RemoteCall(Requests requests, ServerLink link, String method, String path,
      StreamExchange started) {
    this(requests, link, method, path, null, null, null, false);
    this.exchange = started;
  }

  RemoteCall start() {
    exchange = link.start(method, path,
        "POST".equals(method) ? "application/json" : "application/octet-stream",
        coding, checksum, body == null ? null : body.retainedDuplicate(), sinks.get());
    return this;
  }

  /** Sends {@code header} as the body's {@value Wire#CHECKSUM}. */
  RemoteCall checksum(String header) {
    this.checksum = header;
    return this;
  }

  /** @return the status, or {@link #UNREACHABLE} */
  int await() {
    try {
      while (true) {
        StreamExchange current = exchange;
        if (current == null) {
          return UNREACHABLE;
        }
        try {
          return current.done.get(requests.timeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
          if (current.abandon()) {
            return current.done.join();
          }
          link.failed(new TimeoutException("no answer to " + method + " in "
              + requests.timeout().toMillis() + " ms"));
          return UNREACHABLE;
        } catch (ExecutionException e) {
          current.abandon();
          Throwable cause = e.getCause();
          if (!retryLeft) {
            if (cause instanceof IOException) {
              link.failed(cause);
            } else if (cause instanceof DamagedBlockException) {
              requests.damaged().increment();
              log.warn("{} {} on {}: {} twice; counted as a miss", method, path, link.name,
                  cause.getMessage());
            } else {
              log.warn("{} {} on {} failed: {}", method, path, link.name, cause.toString());
            }
            return UNREACHABLE;
          }
          retryLeft = false;
          log.debug("{} {} on {} failed ({}); trying once more", method, path, link.name,
              cause.toString());
        } catch (InterruptedException e) {
          current.abandon();
          Thread.currentThread().interrupt();
          return UNREACHABLE;
        } finally {
          current.awaitBodyReleased(BODY_PATIENCE_MILLIS);
        }
        start();
      }
    } finally {
      if (body != null) {
        body.release();
      }
    }
  }
}
