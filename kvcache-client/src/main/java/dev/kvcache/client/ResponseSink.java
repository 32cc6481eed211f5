package dev.kvcache.client;

import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http2.Http2Headers;

/** Where a response's body goes as its frames arrive. Called on the connection's IO thread. */
interface ResponseSink {

  /**
   * The response's status and headers.
   *
   * @return false to stop: the stream is reset and the body not read
   */
  boolean begin(int status, Http2Headers headers);

  /** The next part of the body; the caller releases it. */
  void accept(ByteBuf content);

  /** The body is complete. */
  default void end() {}

  /** Small bodies (JSON answers and errors) as text, up to 64 KiB. */
  final class Text implements ResponseSink {
    private static final int MAX = 64 * 1024;
    private final StringBuilder text = new StringBuilder();

    @Override
    public boolean begin(int status, Http2Headers headers) {
      return true;
    }

    @Override
    public void accept(ByteBuf content) {
      int n = Math.min(content.readableBytes(), MAX - text.length());
      if (n > 0) {
        text.append(content.toString(content.readerIndex(), n, java.nio.charset.StandardCharsets.UTF_8));
      }
    }

    @Override
    public String toString() {
      return text.toString();
    }
  }
}
