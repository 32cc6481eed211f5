package dev.kvcache.client;

import dev.kvcache.spi.Crc32c;
import dev.kvcache.spi.Rendezvous;
import dev.kvcache.wire.Wire;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.concurrent.Future;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One server: its HTTP/2 connections (cleartext with prior knowledge, or TLS with ALPN; two by
 * default), opened on first
 * use, each request its own stream. A calling thread keeps to one connection, so that its requests
 * find the same IO thread (and the server the same event loop) awake and warm: sent round-robin
 * instead, one thread's 256 KiB GETs took 1.6 times as long. A server that cannot be reached or
 * does not answer in time is down for a back-off that doubles with each failure; while down,
 * requests to it are not attempted.
 */
final class ServerLink implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(ServerLink.class);
  private static final int WINDOW_BYTES = 4 << 20;
  private static final int CONNECTION_WINDOW_BYTES = 64 << 20;
  private static final int MAX_FRAME_BYTES = 1 << 20;
  /** Bytes the socket takes before streams wait for it to drain (Netty's default: 64 KiB). */
  private static final WriteBufferWaterMark WRITE_BUFFER = new WriteBufferWaterMark(512 << 10, 1 << 20);

  final String name;
  final long id;
  private final InetSocketAddress address;
  private final RemoteTierConfig config;
  private final Bootstrap bootstrap;
  private final boolean tls;
  private final ClientConnection[] connections;
  private long downUntilNanos;
  private long backoffNanos;
  private boolean down;

  /**
   * @param ssl the TLS context, or null for cleartext
   * @param tlsName the name the server's certificate must bear
   */
  ServerLink(InetSocketAddress address, RemoteTierConfig config, EventLoopGroup group,
      SslContext ssl, String tlsName) {
    this.address = address;
    this.tls = ssl != null;
    this.name = address.getHostString() + ":" + address.getPort();
    this.id = Rendezvous.serverId(name);
    this.config = config;
    this.connections = new ClientConnection[config.connectionsPerServer];
    this.backoffNanos = config.downBackoff.toNanos();
    this.bootstrap = new Bootstrap()
        .group(group)
        .channel(NioSocketChannel.class)
        .option(ChannelOption.TCP_NODELAY, true)
        .option(ChannelOption.WRITE_BUFFER_WATER_MARK, WRITE_BUFFER)
        .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) config.connectTimeout.toMillis())
        .handler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            if (ssl != null) {
              ch.pipeline().addLast(ssl.newHandler(ch.alloc(), tlsName, address.getPort()));
            }
            ch.pipeline().addLast(
                ClientConnection.create(WINDOW_BYTES, CONNECTION_WINDOW_BYTES, MAX_FRAME_BYTES));
          }
        });
  }

  /** True while the server is in its back-off after a failure. */
  synchronized boolean isDown() {
    return down && System.nanoTime() < downUntilNanos;
  }

  /**
   * Starts a request: opens its stream and writes it on the event loop.
   *
   * @param coding the body's content coding, or without a body the coding the answer may come
   *     in; null for none
   * @param checksum the body's CRC32C as its header value ({@link Crc32c#toHeader}), or null
   * @param body the request body, released once sent or given up, or null
   * @return the exchange, or null if the server is down or cannot be reached
   */
  StreamExchange start(String method, String path, String contentType, String coding,
      String checksum, ByteBuf body, ResponseSink sink) {
    ClientConnection connection = connection();
    if (connection == null) {
      if (body != null) {
        body.release();
      }
      return null;
    }
    Http2Headers headers = headers(method, path);
    if (body != null) {
      headers.set("content-type", contentType);
      headers.setLong("content-length", body.readableBytes());
    }
    if (coding != null) {
      headers.set(body != null ? "content-encoding" : "accept-encoding", coding);
    }
    if (checksum != null) {
      headers.set(Wire.CHECKSUM, checksum);
    }
    StreamExchange exchange = new StreamExchange(sink, body != null);
    // the stream is opened and written on the event loop, in one go: the caller only waits for
    // the answer
    connection.channel().eventLoop().execute(() -> connection.send(exchange, headers, body, false));
    return exchange;
  }

  /**
   * Starts a PUT whose body the caller then sends in parts through the returned stream, ending it
   * with {@link BodyStream#end()}.
   *
   * @param length the body's length, for its {@code content-length}; -1 if not known up front
   * @param coding the body's content coding, or null
   * @return the body's stream, or null if the server is down or cannot be reached
   */
  BodyStream startPut(String path, long length, String coding, ResponseSink sink) {
    ClientConnection connection = connection();
    if (connection == null) {
      return null;
    }
    Http2Headers headers = headers("PUT", path).set("content-type", "application/octet-stream");
    if (length >= 0) {
      headers.setLong("content-length", length);
    }
    if (coding != null) {
      headers.set("content-encoding", coding);
    }
    StreamExchange exchange = new StreamExchange(sink, false); // the parts are the stream's copies
    connection.channel().eventLoop().execute(() -> connection.send(exchange, headers, null, true));
    return new BodyStream(exchange, connection, config.requestTimeout.toMillis());
  }

  private Http2Headers headers(String method, String path) {
    Http2Headers headers = new DefaultHttp2Headers()
        .method(method)
        .path(path)
        .scheme(tls ? "https" : "http")
        .authority(name);
    if (config.token != null) {
      headers.set("authorization", "Bearer " + config.token);
    }
    return headers;
  }

  private ClientConnection connection() {
    synchronized (this) {
      if (isDown()) {
        return null;
      }
      int slot = (int) (Thread.currentThread().getId() % connections.length);
      ClientConnection current = connections[slot];
      if (current != null && current.takesStreams()) {
        return current;
      }
      if (current != null && current.channel().isActive()) {
        // retired (told to go away, or out of stream ids): its requests under way may finish
        current.channel().eventLoop().schedule(() -> current.channel().close(),
            config.requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
      }
      ChannelFuture connecting = bootstrap.connect(address);
      if (!connecting.awaitUninterruptibly(config.connectTimeout.toMillis() + 100)
          || !connecting.isSuccess()) {
        connecting.channel().close();
        failed(connecting.cause());
        return null;
      }
      ClientConnection connected = connecting.channel().pipeline().get(ClientConnection.class);
      if (connected == null) { // closed as soon as connected
        failed(new IOException("the connection closed as it opened"));
        return null;
      }
      String refused = tls ? handshake(connecting.channel().pipeline().get(SslHandler.class)) : null;
      if (refused != null) {
        connecting.channel().close();
        failed(new IOException(refused));
        return null;
      }
      connections[slot] = connected;
      if (down) {
        log.info("server {} is back", name);
        down = false;
        backoffNanos = config.downBackoff.toNanos();
      }
      return connections[slot];
    }
  }

  /** Waits for the TLS handshake; null once it succeeded with HTTP/2, else why not. */
  private String handshake(SslHandler ssl) {
    if (ssl == null) {
      return "the connection closed as it opened";
    }
    Future<?> done = ssl.handshakeFuture();
    if (!done.awaitUninterruptibly(config.connectTimeout.toMillis() + 100)) {
      return "no TLS handshake within " + config.connectTimeout.toMillis() + " ms";
    }
    if (!done.isSuccess()) {
      return "TLS handshake failed: " + done.cause().getMessage();
    }
    if (!ApplicationProtocolNames.HTTP_2.equals(ssl.applicationProtocol())) {
      return "the server did not choose HTTP/2 by ALPN (it chose "
          + ssl.applicationProtocol() + ")";
    }
    return null;
  }

  /** Marks the server down after a failure to connect or to answer in time. */
  synchronized void failed(Throwable cause) {
    long now = System.nanoTime();
    if (down && now < downUntilNanos) {
      return;
    }
    if (down) {
      backoffNanos = Math.min(backoffNanos * 2, config.maxDownBackoff.toNanos());
      log.debug("server {} is still down ({}); next try in {} ms", name, cause,
          backoffNanos / 1_000_000);
    } else {
      log.warn("server {} is down ({}); its blocks are misses until it is back, tried every"
          + " {} to {} ms", name, cause == null ? "no answer" : cause.toString(),
          backoffNanos / 1_000_000, config.maxDownBackoff.toMillis());
    }
    down = true;
    downUntilNanos = now + backoffNanos;
    for (int i = 0; i < connections.length; i++) {
      if (connections[i] != null) {
        connections[i].channel().close();
        connections[i] = null;
      }
    }
  }

  @Override
  public synchronized void close() {
    for (ClientConnection c : connections) {
      if (c != null) {
        c.channel().close().awaitUninterruptibly(1000);
      }
    }
  }
}
