package dev.kvcache.server.http;

import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2ConnectionEncoder;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.util.AsciiString;

/**
 * Answers an HTTP/2 request that expects {@code 100-continue} with a {@code 100} at once, which
 * RFC 9110 §10.1.1 lets a server do for any request it cannot answer from its headers alone, and
 * passes it on without the expectation, to the fast paths and Micronaut alike.
 *
 * <p>Without it, the two ways an HTTP/2 request is taken answered differently: {@link FastPut}
 * sent no {@code 100}, so a client that waits for one before it sends its body waited for its own
 * timeout; and Micronaut 4.10 sends its {@code 100} when the route first reads the body, which it
 * also does when it releases a request answered before that (a 401, 413 or 415 from the headers),
 * after the answer: Netty refuses a second HEADERS frame there with an exception that ends the
 * whole connection with a GOAWAY, losing the answer's body and every other stream on the
 * connection. HTTP/1.1 keeps Micronaut's own handling.
 */
public final class ExpectContinue extends RequestFrameStage {

  private static final AsciiString CONTINUE = AsciiString.cached("100");

  private final Http2ConnectionEncoder encoder;

  private ExpectContinue(Http2ConnectionHandler handler) {
    super(handler.decoder().frameListener());
    this.encoder = handler.encoder();
  }

  /** Puts the stage in front of the connection's frame listeners. */
  static void install(Http2ConnectionHandler handler) {
    handler.decoder().frameListener(new ExpectContinue(handler));
  }

  @Override
  public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers,
      int streamDependency, short weight, boolean exclusive, int padding, boolean endOfStream)
      throws Http2Exception {
    CharSequence expect = endOfStream ? null : headers.get(HttpHeaderNames.EXPECT);
    if (expect != null && AsciiString.contentEqualsIgnoreCase(HttpHeaderValues.CONTINUE,
        AsciiString.of(expect).trim())) {
      headers.remove(HttpHeaderNames.EXPECT);
      // flushed when the read completes, with whatever else it wrote
      encoder.writeHeaders(ctx, streamId, new DefaultHttp2Headers(false, 1).status(CONTINUE), 0,
          false, ctx.newPromise());
    }
    super.onHeadersRead(ctx, streamId, headers, streamDependency, weight, exclusive, padding,
        endOfStream);
  }
}
