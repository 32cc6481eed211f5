package dev.kvcache.server;

import static io.netty.handler.codec.http2.Http2CodecUtil.DEFAULT_WINDOW_SIZE;

import io.micronaut.context.annotation.Value;
import io.micronaut.context.event.BeanCreatedEvent;
import io.micronaut.context.event.BeanCreatedEventListener;
import io.micronaut.http.server.netty.NettyServerCustomizer;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.http2.CleartextHttp2ServerUpgradeHandler;
import io.netty.handler.codec.http2.Http2Connection;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import jakarta.inject.Singleton;

/**
 * Opens each HTTP/2 connection's receive window to {@code kvcache.http2-connection-window}
 * (default 64 MiB). HTTP/2 starts every connection at 64 KiB, whatever the stream windows are,
 * and Micronaut has no setting for it: a client uploading a multi-MiB block would otherwise wait
 * for a window update every 32 KiB.
 *
 * <p>It also makes the HTTP/2 decoder gather a frame that spans socket reads as a composite of
 * the read buffers, instead of copying each read into one growing buffer: a body's bytes are then
 * copied once on their way into the cache, not twice (seen with {@code perf}: the merge copy cost
 * as much CPU as the copy into the cache).
 */
@Singleton
class ConnectionWindow implements BeanCreatedEventListener<NettyServerCustomizer.Registry> {

  private final int windowBytes;

  ConnectionWindow(@Value("${kvcache.http2-connection-window:67108864}") int windowBytes) {
    this.windowBytes = windowBytes;
  }

  @Override
  public NettyServerCustomizer.Registry onCreated(BeanCreatedEvent<NettyServerCustomizer.Registry> event) {
    event.getBean().register(new Customizer(null));
    return event.getBean();
  }

  /**
   * First in the connection's pipeline: after each read, looks for the HTTP/2 handler, which
   * replaces the cleartext upgrade handler once the client's preface has arrived; widens the
   * window and sets the cumulator then, and leaves. Leaves too once the connection turned out to
   * be HTTP/1.1.
   */
  private final class Widener extends ChannelInboundHandlerAdapter {

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
      super.channelRead(ctx, msg);
      if (ctx.isRemoved()) {
        return; // the connection closed while it read
      }
      Http2ConnectionHandler handler = ctx.pipeline().get(Http2ConnectionHandler.class);
      if (handler != null) {
        Http2Connection connection = handler.connection();
        connection.local().flowController()
            .incrementWindowSize(connection.connectionStream(), windowBytes - DEFAULT_WINDOW_SIZE);
        handler.setCumulator(ByteToMessageDecoder.COMPOSITE_CUMULATOR);
        ctx.pipeline().remove(this);
      } else if (ctx.pipeline().get(CleartextHttp2ServerUpgradeHandler.class) == null) {
        ctx.pipeline().remove(this);
      }
    }
  }

  private final class Customizer implements NettyServerCustomizer {
    private final Channel channel;

    Customizer(Channel channel) {
      this.channel = channel;
    }

    @Override
    public NettyServerCustomizer specializeForChannel(Channel channel, ChannelRole role) {
      return role == ChannelRole.CONNECTION ? new Customizer(channel) : this;
    }

    /** The HTTP/2 handler is not there yet: it comes with the client's preface. */
    @Override
    public void onInitialPipelineBuilt() {
      if (channel != null && windowBytes > DEFAULT_WINDOW_SIZE
          && channel.pipeline().get(CleartextHttp2ServerUpgradeHandler.class) != null) {
        channel.pipeline().addFirst("kvcache-connection-window", new Widener());
      }
    }
  }
}
