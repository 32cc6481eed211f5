package dev.kvcache.server.http;

import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http2.Http2CodecUtil;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2FrameListener;
import io.netty.handler.codec.http2.Http2FrameListenerDecorator;
import io.netty.handler.codec.http2.Http2Headers;

/**
 * A stage ahead of a connection's HTTP/2 frame listener that takes a request's headers in one
 * form: the one with priority fields, which is the form Netty's decoder hands its listener for
 * every HEADERS frame. The form without them, should it come, is passed on as that form with the
 * default priority, as the decoder itself does.
 */
public abstract class RequestFrameStage extends Http2FrameListenerDecorator {

  public RequestFrameStage(Http2FrameListener next) {
    super(next);
  }

  @Override
  public final void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers,
      int padding, boolean endOfStream) throws Http2Exception {
    onHeadersRead(ctx, streamId, headers, 0, Http2CodecUtil.DEFAULT_PRIORITY_WEIGHT, false,
        padding, endOfStream);
  }
}
