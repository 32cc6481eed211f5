package dev.kvcache.client;

import io.netty.buffer.ByteBuf;
import java.time.Duration;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;

/**
 * What every request of one tier shares: its time-out, and the count of blocks that arrived
 * damaged twice ({@link RemoteTier#damagedBlocks}).
 */
record Requests(Duration timeout, LongAdder damaged) {

  /** A request, not started yet ({@link RemoteCall#start}). */
  RemoteCall call(ServerLink link, String method, String path, ByteBuf body, String coding,
      Supplier<ResponseSink> sinks, boolean retryOnce) {
    return new RemoteCall(this, link, method, path, body, coding, sinks, retryOnce);
  }

  /** Sends a request and waits for it: its status, or {@link RemoteCall#UNREACHABLE}. */
  int send(ServerLink link, String method, String path, ByteBuf body, String coding,
      Supplier<ResponseSink> sinks, boolean retryOnce) {
    return call(link, method, path, body, coding, sinks, retryOnce).start().await();
  }
}
