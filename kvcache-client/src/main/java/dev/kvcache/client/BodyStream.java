package dev.kvcache.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.WritableByteChannel;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * A request body sent in parts as the caller produces them (a block written piece by piece, or
 * encoded chunk by chunk), on a stream its {@link ServerLink} opened with the headers alone. Each
 * part is copied into a pooled buffer of its own, and the caller waits while more than {@link
 * #MAX_UNSENT_BYTES} are not yet written to the socket, so memory stays bounded whatever the
 * body's length.
 */
final class BodyStream implements WritableByteChannel {

  /** Bytes handed over but not yet written to the socket before the caller waits. */
  static final int MAX_UNSENT_BYTES = 1 << 20;

  final StreamExchange exchange;
  private final ClientConnection connection;
  private final long patienceMillis;
  private final Semaphore unsent = new Semaphore(MAX_UNSENT_BYTES);
  private boolean ended;

  BodyStream(StreamExchange exchange, ClientConnection connection, long patienceMillis) {
    this.exchange = exchange;
    this.connection = connection;
    this.patienceMillis = patienceMillis;
  }

  /**
   * Sends {@code src}'s remaining bytes as the body's next part, advancing its position.
   *
   * @throws IOException if the exchange has ended (the server answered or reset the stream
   *     before the body was all sent), or the socket took nothing for the request timeout
   */
  @Override
  public int write(ByteBuffer src) throws IOException {
    int n = src.remaining();
    ByteBuf part = ByteBufAllocator.DEFAULT.directBuffer(n);
    part.writeBytes(src);
    send(part, false);
    return n;
  }

  /**
   * Resets the stream, for a sender that stops before the body's end: the server answered early,
   * the caller gave up, or parts were not taken. An answer that already came stands.
   */
  void cancel() {
    ended = true;
    connection.channel().eventLoop().execute(() -> connection.cancel(exchange.streamId()));
  }

  /** Ends the body (an empty last part). */
  void end() throws IOException {
    send(Unpooled.EMPTY_BUFFER, true);
  }

  private void send(ByteBuf part, boolean last) throws IOException {
    if (ended) {
      part.release();
      throw new IllegalStateException("the body was ended");
    }
    int permits = Math.min(part.readableBytes(), MAX_UNSENT_BYTES);
    try {
      if (exchange.done.isDone()) {
        throw new IOException("the server answered before the whole body was sent");
      }
      if (!unsent.tryAcquire(permits, patienceMillis, TimeUnit.MILLISECONDS)) {
        throw new IOException("the body's parts were not sent in " + patienceMillis + " ms");
      }
    } catch (InterruptedException e) {
      part.release();
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted while sending a request body");
    } catch (IOException e) {
      part.release();
      throw e;
    }
    ended = last;
    connection.channel().eventLoop().execute(
        () -> connection.sendData(exchange, part, last, () -> unsent.release(permits)));
  }

  @Override
  public boolean isOpen() {
    return !ended;
  }

  @Override
  public void close() {}
}
