package dev.kvcache.server.http;

import static io.netty.handler.codec.http2.Http2CodecUtil.DEFAULT_WINDOW_SIZE;

import dev.kvcache.server.cache.SizeSetting;
import dev.kvcache.server.s3.S3Settings;
import dev.kvcache.tiered.KvCacheConfig;
import io.micronaut.context.annotation.Value;
import io.micronaut.context.event.BeanCreatedEvent;
import io.micronaut.context.event.BeanCreatedEventListener;
import io.micronaut.http.server.netty.NettyServerCustomizer;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http2.CleartextHttp2ServerUpgradeHandler;
import io.netty.handler.codec.http2.DefaultHttp2RemoteFlowController;
import io.netty.handler.codec.http2.Http2CodecUtil;
import io.netty.handler.codec.http2.Http2Connection;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2RemoteFlowController;
import io.netty.handler.codec.http2.WeightedFairQueueByteDistributor;
import jakarta.inject.Singleton;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sets each connection up for multi-MiB bodies, none of which Micronaut has a setting for.
 *
 * <ul>
 *   <li>The HTTP/2 receive window of the connection is opened to {@code
 *       kvcache.http2-connection-window} (default 64 MiB). HTTP/2 starts every connection at 64
 *       KiB, whatever the stream windows are: a client uploading a multi-MiB block would otherwise
 *       wait for a window update every 32 KiB.
 *   <li>The HTTP/2 decoder gathers a frame that spans socket reads as a composite of the read
 *       buffers, instead of copying each read into one growing buffer: a body's bytes are then
 *       copied once on their way into the cache, not twice (seen with {@code perf}: the merge copy
 *       cost as much CPU as the copy into the cache).
 *   <li>Streams answering at once take turns of {@code kvcache.http2-write-quantum} bytes (default
 *       256 KiB) instead of Netty's 1 KiB, so their frames are as large as the client allows, not 1
 *       KiB slivers; and the socket takes {@code kvcache.write-buffer-bytes} (default 640 KiB, two
 *       turns and room to spare) before the streams wait for it to drain, instead of 64 KiB.
 *       Measured in docs/benchmarks/history.md: 256 KiB GETs on four streams moved about twice the bytes
 *       per second with a 256 KiB turn and a 1 MiB buffer, and a 640 KiB buffer moved 0.96–1.86×
 *       the bytes of a 1 MiB one.
 *   <li>GETs of cached blocks are answered by {@link FastGet} (HTTP/2), and PUTs RAM can take at
 *       once are stored by {@link FastPut} (HTTP/2 and HTTP/1.1), ahead of Micronaut; pipelined
 *       HTTP/1.1 requests are handled one at a time, in order ({@link Http1Requests}).
 *   <li>A request body still arriving after its answer went out is read and dropped if at most
 *       twice the largest block is still to come, so that its client can finish sending and take
 *       the answer; otherwise its stream is reset with {@code NO_ERROR}, so that its client stops
 *       sending ({@link UnreadBody}).
 *   <li>A request that expects {@code 100-continue} gets its {@code 100} at once, whoever takes
 *       it ({@link ExpectContinue}).
 *   <li>A connection closes only once the answers written to it have gone out, for at most the
 *       graceful stop's grace period, and then lingers: its sending side is shut and what its
 *       client still sends (the rest of a refused HTTP/1.1 body) is dropped for up to a second, so
 *       that no reset throws away an answer the client has not read ({@link FlushBeforeClose}).
 * </ul>
 */
@Singleton
class ConnectionTuning implements BeanCreatedEventListener<NettyServerCustomizer.Registry> {

  private static final Logger log = LoggerFactory.getLogger(ConnectionTuning.class);

  /** Netty's remote flow controller keeps its byte distributor private: reached by reflection. */
  private static final Field DISTRIBUTOR = distributorField();

  /** The client's preface, which opens an HTTP/2 connection. */
  private static final ByteBuf PREFACE = Http2CodecUtil.connectionPrefaceBuf();

  private final int windowBytes;
  private final int writeQuantum;
  private final WriteBufferWaterMark waterMark;
  private final FastGet fastGet;
  private final FastPut fastPut;
  private final long drainLimit;
  private final long closeLimitNanos;
  /** The S3 API's settings: its port's connections get none of the block API's fast paths. */
  private final S3Settings s3;

  ConnectionTuning(FastGet fastGet, FastPut fastPut, KvCacheConfig cacheConfig,
      @Value("${kvcache.http2-connection-window:64MiB}") String windowBytes,
      @Value("${kvcache.http2-write-quantum:256KiB}") String writeQuantum,
      @Value("${kvcache.write-buffer-bytes:640KiB}") String writeBufferBytes,
      @Value("${micronaut.lifecycle.graceful-shutdown.grace-period:30s}") Duration gracePeriod,
      S3Settings s3) {
    this.s3 = s3;
    int bufferBytes = SizeSetting.intBytes("kvcache.write-buffer-bytes", writeBufferBytes, 2);
    this.fastGet = fastGet;
    this.fastPut = fastPut;
    this.drainLimit = 2L * cacheConfig.maxBlockBytes();
    this.closeLimitNanos = gracePeriod.toNanos();
    this.windowBytes = SizeSetting.intBytes("kvcache.http2-connection-window", windowBytes, 65535);
    this.writeQuantum = SizeSetting.intBytes("kvcache.http2-write-quantum", writeQuantum, 1);
    this.waterMark = new WriteBufferWaterMark(bufferBytes / 2, bufferBytes);
  }

  private static Field distributorField() {
    try {
      Field f = DefaultHttp2RemoteFlowController.class.getDeclaredField("streamByteDistributor");
      f.setAccessible(true);
      return f;
    } catch (ReflectiveOperationException | RuntimeException e) {
      log.warn("cannot reach Netty's HTTP/2 byte distributor ({}): streams answering at once"
          + " write in 1 KiB turns", e.toString());
      return null;
    }
  }

  @Override
  public NettyServerCustomizer.Registry onCreated(BeanCreatedEvent<NettyServerCustomizer.Registry> event) {
    event.getBean().register(new Customizer(null));
    return event.getBean();
  }

  /** Whether the connection's answers now go out in turns of the configured size. */
  private boolean setWriteQuantum(Http2Connection connection) {
    Http2RemoteFlowController controller = connection.remote().flowController();
    if (DISTRIBUTOR == null || !(controller instanceof DefaultHttp2RemoteFlowController)) {
      return false;
    }
    try {
      if (DISTRIBUTOR.get(controller) instanceof WeightedFairQueueByteDistributor distributor) {
        distributor.allocationQuantum(writeQuantum);
        return true;
      }
    } catch (IllegalAccessException e) {
      // made accessible above
    }
    return false;
  }

  /**
   * Tunes an HTTP/2 connection and puts kvcache's stages ahead of Micronaut's frame listener: before
   * the handler reads its first frame, so that every request of the connection passes them.
   */
  private void tune(ChannelPipeline pipeline, Http2ConnectionHandler handler) {
    Http2Connection connection = handler.connection();
    if (windowBytes > DEFAULT_WINDOW_SIZE) {
      try {
        connection.local().flowController()
            .incrementWindowSize(connection.connectionStream(), windowBytes - DEFAULT_WINDOW_SIZE);
      } catch (Http2Exception e) {
        throw new IllegalStateException("widening the connection's window failed", e);
      }
    }
    handler.setCumulator(ByteToMessageDecoder.COMPOSITE_CUMULATOR);
    if (!setWriteQuantum(connection)) {
      log.debug("HTTP/2 connection {} keeps Netty's write turns", pipeline.channel());
    }
    if (!onS3Port(pipeline.channel())) {
      fastGet.install(handler);
      Http2PutListener.install(fastPut, handler);
    }
    UnreadBody.install(handler, pipeline.context(handler), drainLimit);
    ExpectContinue.install(handler);
  }

  /** Whether {@code channel} is a connection to the S3 API's port. */
  private boolean onS3Port(Channel channel) {
    int port = s3.port();
    return port > 0 && channel.localAddress() instanceof InetSocketAddress a
        && a.getPort() == port;
  }

  /**
   * First in the connection's pipeline of a cleartext connection, where the HTTP/2 handler comes
   * with the client's preface: hands the preface on alone, so that the handler Netty puts in place
   * of the cleartext upgrade handler is tuned before the frames that follow the preface in the
   * same read reach it (the upgrade handler hands them on, and ends the read, as it leaves). Also
   * looks for the handler after each read (it comes with an HTTP/1.1 upgrade to h2c too), and
   * leaves once the connection is tuned, or turned out to be HTTP/1.1.
   */
  private final class Tuner extends ChannelInboundHandlerAdapter {

    /** Bytes of the client's preface handed on so far. */
    private int prefaceSeen;

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
      if (msg instanceof ByteBuf bytes && startsPreface(ctx, bytes)) {
        int n = Math.min(PREFACE.readableBytes() - prefaceSeen, bytes.readableBytes());
        prefaceSeen += n;
        super.channelRead(ctx, bytes.readRetainedSlice(n));
        if (!ctx.isRemoved()) {
          lookForHttp2(ctx);
        }
        if (bytes.isReadable()) {
          ctx.fireChannelRead(bytes); // the frames, past the stages now in place
        } else {
          bytes.release();
        }
        return;
      }
      super.channelRead(ctx, msg);
      if (!ctx.isRemoved()) {
        lookForHttp2(ctx);
      }
    }

    /** Whether {@code bytes} go on with the client's preface while the upgrade handler waits for it. */
    private boolean startsPreface(ChannelHandlerContext ctx, ByteBuf bytes) {
      int n = Math.min(PREFACE.readableBytes() - prefaceSeen, bytes.readableBytes());
      return n > 0 && ctx.pipeline().get(CleartextHttp2ServerUpgradeHandler.class) != null
          && ByteBufUtil.equals(PREFACE, prefaceSeen, bytes, bytes.readerIndex(), n);
    }

    /** Tunes the connection and leaves if its HTTP/2 handler is there; leaves if it is HTTP/1.1. */
    private void lookForHttp2(ChannelHandlerContext ctx) {
      Http2ConnectionHandler handler = ctx.pipeline().get(Http2ConnectionHandler.class);
      if (handler != null) {
        tune(ctx.pipeline(), handler);
        ctx.pipeline().remove(this);
      } else if (ctx.pipeline().get(CleartextHttp2ServerUpgradeHandler.class) == null
          && ctx.pipeline().get(HttpServerCodec.class) != null) {
        ctx.pipeline().remove(this); // HTTP/1.1
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

    /**
     * An HTTP/1.1 connection's handlers are in place (at once, or once its first request showed
     * it is not HTTP/2): {@link Http1Requests} goes ahead of Micronaut's, to keep pipelined
     * requests in order and to store the PUTs it can take at once.
     */
    @Override
    public void onStreamPipelineBuilt() {
      if (channel != null) {
        Http1Requests.install(fastPut, channel.pipeline(), !onS3Port(channel));
      }
    }

    /**
     * The connection's first handlers are in place: with TLS, once ALPN chose (the HTTP/2 handler
     * is then there, and is tuned at once); in cleartext, before the first read (the HTTP/2 handler
     * comes with the client's preface: {@link Tuner}).
     */
    @Override
    public void onInitialPipelineBuilt() {
      if (channel != null) {
        channel.config().setWriteBufferWaterMark(waterMark);
        Http2ConnectionHandler handler = channel.pipeline().get(Http2ConnectionHandler.class);
        if (handler != null) {
          tune(channel.pipeline(), handler);
        } else {
          channel.pipeline().addFirst("kvcache-connection-tuning", new Tuner());
        }
        channel.pipeline().addFirst("kvcache-flush-before-close", new FlushBeforeClose(closeLimitNanos));
      }
    }
  }
}
