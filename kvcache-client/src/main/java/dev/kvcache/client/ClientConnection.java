package dev.kvcache.client;

import static io.netty.handler.codec.http2.Http2CodecUtil.DEFAULT_WINDOW_SIZE;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.http2.AbstractHttp2ConnectionHandlerBuilder;
import io.netty.handler.codec.http2.DefaultHttp2Connection;
import io.netty.handler.codec.http2.DefaultHttp2RemoteFlowController;
import io.netty.handler.codec.http2.Http2Connection;
import io.netty.handler.codec.http2.Http2ConnectionAdapter;
import io.netty.handler.codec.http2.Http2ConnectionDecoder;
import io.netty.handler.codec.http2.Http2ConnectionEncoder;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2FrameAdapter;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2Stream;
import io.netty.handler.codec.http2.WeightedFairQueueByteDistributor;
import io.netty.util.collection.IntObjectHashMap;
import io.netty.util.collection.IntObjectMap;
import java.io.IOException;

/**
 * One HTTP/2 connection to a server, and the requests under way on it, each on its own stream.
 * Frames go straight from the decoder to the request's {@link StreamExchange}, by stream id: no
 * channel or frame object per stream, which Netty's stream multiplexer opens and closes for every
 * request. Everything here runs on the connection's event loop.
 */
final class ClientConnection extends Http2ConnectionHandler {

  /**
   * Bytes a stream sends before the next stream's turn, instead of Netty's 1 KiB: concurrent
   * puts on one connection then go out in large frames, not 1 KiB slivers.
   */
  private static final int WRITE_QUANTUM_BYTES = 256 << 10;

  /** Leaves ids for the requests that may be on their way to the event loop at once. */
  private static final int LAST_STREAM_ID_TO_USE = Integer.MAX_VALUE - (1 << 20);

  private final IntObjectMap<StreamExchange> exchanges = new IntObjectHashMap<>();
  private final int connectionWindowBytes;
  private ChannelHandlerContext ctx;

  private ClientConnection(Http2ConnectionDecoder decoder, Http2ConnectionEncoder encoder,
      Http2Settings settings, int connectionWindowBytes) {
    super(decoder, encoder, settings);
    this.connectionWindowBytes = connectionWindowBytes;
    // a DATA frame spanning several socket reads is gathered as a composite of the read buffers,
    // not copied into one growing buffer: its bytes are copied once, into place
    setCumulator(ByteToMessageDecoder.COMPOSITE_CUMULATOR);
    connection().addListener(new Http2ConnectionAdapter() {
      @Override
      public void onStreamClosed(Http2Stream stream) {
        StreamExchange exchange = exchanges.remove(stream.id());
        if (exchange != null) {
          exchange.closed();
        }
      }
    });
  }

  /**
   * A connection that receives {@code windowBytes} per stream, {@code connectionWindowBytes} in
   * all, in frames of up to {@code maxFrameBytes}.
   */
  static ClientConnection create(int windowBytes, int connectionWindowBytes, int maxFrameBytes) {
    return new Builder(connectionWindowBytes)
        .initialSettings(Http2Settings.defaultSettings()
            .initialWindowSize(windowBytes).maxFrameSize(maxFrameBytes))
        .build();
  }

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) throws Exception {
    this.ctx = ctx;
    super.handlerAdded(ctx);
  }

  /**
   * After the preface, opens the connection's receive window as wide as asked: HTTP/2 starts it at
   * 64 KiB whatever the stream windows are, and a multi-MiB block would otherwise stall on a
   * window update every 32 KiB.
   */
  @Override
  public void channelActive(ChannelHandlerContext ctx) throws Exception {
    super.channelActive(ctx);
    Http2Connection c = connection();
    c.local().flowController().incrementWindowSize(c.connectionStream(),
        connectionWindowBytes - DEFAULT_WINDOW_SIZE);
  }

  /** The connection's channel. */
  Channel channel() {
    return ctx.channel();
  }

  /**
   * Whether new requests may go here: connected, not told by the server to go away, and with
   * stream ids left (a connection has about a billion; at 10,000 requests a second they last 30
   * hours). Read from any thread; a stale answer only means one more failed request.
   */
  boolean takesStreams() {
    Http2Connection c = connection();
    return channel().isActive() && !c.goAwayReceived()
        && c.local().lastStreamCreated() < LAST_STREAM_ID_TO_USE;
  }

  /**
   * Opens a stream for {@code exchange} and sends its request; on the event loop. A stream that
   * cannot be opened (the connection is closing, or the server's stream limit is reached) fails
   * the exchange.
   *
   * @param body the request body, released once sent or given up; or null
   * @param bodyFollows whether, without {@code body}, the body is sent in parts afterwards ({@link
   *     #sendData})
   */
  void send(StreamExchange exchange, Http2Headers headers, ByteBuf body, boolean bodyFollows) {
    int id = connection().local().incrementAndGetNextStreamId();
    if (id < 0 || !exchange.started(this, id)) {
      if (body != null) {
        body.release();
      }
      if (id < 0) {
        exchange.failedToStart(new IOException("no stream ids left on the connection"));
      }
      return;
    }
    exchanges.put(id, exchange);
    ChannelPromise headersSent = ctx.newPromise();
    headersSent.addListener((ChannelFuture f) -> {
      if (!f.isSuccess()) {
        exchanges.remove(id);
        exchange.failedToStart(new IOException("cannot open a stream", f.cause()));
      }
    });
    encoder().writeHeaders(ctx, id, headers, 0, body == null && !bodyFollows, headersSent);
    if (body != null) {
      ChannelPromise bodySent = ctx.newPromise();
      exchange.bodyWritten(bodySent);
      encoder().writeData(ctx, id, body, 0, true, bodySent);
    }
    flush(ctx); // this handler's flush: it writes what the flow controller holds, then the socket
  }

  /**
   * Sends the next part of a request body that follows its headers ({@link BodyStream}); on the
   * event loop. A part for a stream that is gone (never opened, reset, or closed) is dropped.
   *
   * @param written run once the part is written to the socket or dropped
   */
  void sendData(StreamExchange exchange, ByteBuf part, boolean last, Runnable written) {
    int id = exchange.streamId();
    Http2Stream stream = id > 0 ? connection().stream(id) : null;
    if (stream == null || !stream.state().localSideOpen()) {
      part.release();
      written.run();
      return;
    }
    ChannelPromise sent = ctx.newPromise();
    sent.addListener(f -> written.run());
    encoder().writeData(ctx, id, part, 0, last, sent);
    flush(ctx);
  }

  /** Resets stream {@code id} if it is still open (the caller gave up on it); on the event loop. */
  void cancel(int id) {
    Http2Stream stream = id > 0 ? connection().stream(id) : null;
    if (stream != null) {
      resetStream(ctx, id, Http2Error.CANCEL.code(), ctx.newPromise());
      flush(ctx);
    }
  }

  /** Feeds each stream's frames to its exchange. */
  private final class Frames extends Http2FrameAdapter {

    @Override
    public int onDataRead(ChannelHandlerContext ctx, int streamId, ByteBuf data, int padding,
        boolean endOfStream) {
      int processed = data.readableBytes() + padding;
      StreamExchange exchange = exchanges.get(streamId);
      if (exchange != null && !exchange.data(data, endOfStream)) {
        cancel(streamId);
      }
      return processed;
    }

    @Override
    public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers,
        int padding, boolean endOfStream) {
      StreamExchange exchange = exchanges.get(streamId);
      if (exchange != null && !exchange.headers(headers, endOfStream)) {
        cancel(streamId);
      }
    }

    @Override
    public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers,
        int streamDependency, short weight, boolean exclusive, int padding, boolean endOfStream) {
      onHeadersRead(ctx, streamId, headers, padding, endOfStream);
    }

    @Override
    public void onRstStreamRead(ChannelHandlerContext ctx, int streamId, long errorCode) {
      StreamExchange exchange = exchanges.remove(streamId);
      if (exchange != null) {
        exchange.fail(new IOException("the server reset the stream: " + errorCode));
      }
    }
  }

  /** Builds the handler on a connection whose streams send in turns of a set size. */
  private static final class Builder
      extends AbstractHttp2ConnectionHandlerBuilder<ClientConnection, Builder> {

    private final int connectionWindowBytes;

    Builder(int connectionWindowBytes) {
      this.connectionWindowBytes = connectionWindowBytes;
      DefaultHttp2Connection connection = new DefaultHttp2Connection(false);
      WeightedFairQueueByteDistributor distributor = new WeightedFairQueueByteDistributor(connection);
      distributor.allocationQuantum(WRITE_QUANTUM_BYTES);
      connection.remote().flowController(new DefaultHttp2RemoteFlowController(connection, distributor));
      connection(connection);
      // a connection closes because it failed, or because the tier closes: requests still under
      // way fail at once instead of holding the close up for Netty's default 30 s
      gracefulShutdownTimeoutMillis(0);
    }

    @Override
    public Builder initialSettings(Http2Settings settings) {
      return super.initialSettings(settings);
    }

    @Override
    public ClientConnection build() {
      return super.build();
    }

    @Override
    protected ClientConnection build(Http2ConnectionDecoder decoder,
        Http2ConnectionEncoder encoder, Http2Settings initialSettings) {
      ClientConnection handler =
          new ClientConnection(decoder, encoder, initialSettings, connectionWindowBytes);
      frameListener(handler.new Frames());
      return handler;
    }
  }
}
