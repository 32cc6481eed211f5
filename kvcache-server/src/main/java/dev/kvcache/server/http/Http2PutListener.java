package dev.kvcache.server.http;

import dev.kvcache.BlockWriter;
import dev.kvcache.wire.Wire;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2ConnectionAdapter;
import io.netty.handler.codec.http2.Http2ConnectionEncoder;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2FrameListener;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Stream;
import io.netty.util.AsciiString;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * {@link FastPut} over HTTP/2, in front of a connection's frame listener: each DATA frame of a
 * PUT it takes is copied into the block's place as it is read. A body longer or shorter than its
 * length is reset by Netty's HTTP/2 decoder, which checks DATA against {@code content-length} (the
 * 400 here is a second line of defence); one slower than {@code kvcache.body-timeout} is answered
 * 408 and reset; a reset or closed stream drops what it had written and frees its room. A request
 * that expects {@code 100-continue} has had its {@code 100} from {@link ExpectContinue}. If the
 * client is still sending after an error's answer, {@link UnreadBody} drains or resets the stream.
 */
final class Http2PutListener extends RequestFrameStage {

  private static final AsciiString JSON = AsciiString.cached("application/json");
  private static final AsciiString PUT_HEADER = AsciiString.cached(Wire.PUT_STATUS);
  private static final AsciiString CHECKSUM_HEADER = AsciiString.cached(Wire.CHECKSUM);

  private final FastPut puts;
  private final Http2ConnectionHandler handler;
  private final Http2ConnectionEncoder encoder;
  /** The connection's uploads under way, by stream; used on its event loop only. */
  private final Map<Integer, Upload> uploads = new HashMap<>();

  /** Puts {@code puts} in front of an HTTP/2 connection's frame listener, if it is enabled. */
  static void install(FastPut puts, Http2ConnectionHandler handler) {
    if (puts.enabled()) {
      Http2PutListener listener = new Http2PutListener(puts, handler.decoder().frameListener(),
          handler);
      handler.decoder().frameListener(listener);
      handler.connection().addListener(new Http2ConnectionAdapter() {
        @Override
        public void onStreamClosed(Http2Stream stream) {
          listener.closed(stream.id());
        }
      });
    }
  }

  Http2PutListener(FastPut puts, Http2FrameListener next, Http2ConnectionHandler handler) {
    super(next);
    this.puts = puts;
    this.handler = handler;
    this.encoder = handler.encoder();
  }

  /** A body on its way into a writer, and the checksum its client sent (or null). */
  private static final class Upload {
    final BlockWriter writer;
    final Integer checksum;
    ScheduledFuture<?> timeout;

    Upload(BlockWriter writer, Integer checksum) {
      this.writer = writer;
      this.checksum = checksum;
    }
  }

  @Override
  public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers,
      int streamDependency, short weight, boolean exclusive, int padding, boolean endOfStream)
      throws Http2Exception {
    if (!headersRead(ctx, streamId, headers, endOfStream)) {
      super.onHeadersRead(ctx, streamId, headers, streamDependency, weight, exclusive, padding,
          endOfStream);
    }
  }

  /** Whether the headers (a request's, or an upload's trailers) are taken here. */
  private boolean headersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers,
      boolean endOfStream) {
    Upload upload = uploads.get(streamId);
    if (upload != null) { // trailers
      if (endOfStream) {
        finish(ctx, streamId, upload);
      }
      return true;
    }
    if (endOfStream) {
      return false;
    }
    CharSequence checksumHeader = headers.get(CHECKSUM_HEADER);
    Integer checksum;
    try {
      checksum = checksumHeader == null ? null : Wire.checksum(checksumHeader);
    } catch (IllegalArgumentException e) {
      return false; // Micronaut answers with the error
    }
    Optional<BlockWriter> writer = puts.writerFor(headers.method(),
        headers.get(HttpHeaderNames.CONTENT_TYPE),
        headers.contains(HttpHeaderNames.CONTENT_ENCODING),
        headers.getLong(HttpHeaderNames.CONTENT_LENGTH), headers.path(),
        headers.get(HttpHeaderNames.AUTHORIZATION), name -> {
          CharSequence value = headers.get(name);
          return value == null ? null : value.toString();
        });
    if (writer.isEmpty()) {
      return false;
    }
    Upload started = new Upload(writer.get(), checksum);
    started.timeout = ctx.executor().schedule(() -> fail(ctx, streamId, puts.timedOut()),
        puts.timeoutNanos(), TimeUnit.NANOSECONDS);
    uploads.put(streamId, started);
    return true;
  }

  @Override
  public int onDataRead(ChannelHandlerContext ctx, int streamId, ByteBuf data, int padding,
      boolean endOfStream) throws Http2Exception {
    Upload upload = uploads.get(streamId);
    if (upload == null) {
      return super.onDataRead(ctx, streamId, data, padding, endOfStream);
    }
    int n = data.readableBytes();
    if (n > upload.writer.remaining()) {
      fail(ctx, streamId, puts.tooLong(upload.writer));
      return n + padding;
    }
    // the frame's own NIO views: nioBuffer() of a composite would merge it first
    for (ByteBuffer part : data.nioBuffers()) {
      upload.writer.write(part);
    }
    if (endOfStream) {
      finish(ctx, streamId, upload);
    }
    return n + padding;
  }

  private void finish(ChannelHandlerContext ctx, int streamId, Upload upload) {
    FastPut.Reply refused = puts.refusal(upload.writer, upload.checksum);
    if (refused != null) {
      fail(ctx, streamId, refused);
      return;
    }
    uploads.remove(streamId);
    upload.timeout.cancel(false);
    boolean[] inRead = {true};
    puts.commit(upload.writer, ctx.executor(), reply -> {
      respond(ctx, streamId, reply);
      if (!inRead[0]) {
        handler.flush(ctx); // not in a read: nothing else flushes it
      }
    });
    inRead[0] = false;
  }

  /** Answers an upload that went wrong and drops its block. */
  private void fail(ChannelHandlerContext ctx, int streamId, FastPut.Reply reply) {
    Upload upload = uploads.remove(streamId);
    if (upload == null) {
      return; // done or closed meanwhile
    }
    upload.timeout.cancel(false);
    upload.writer.close();
    respond(ctx, streamId, reply);
    handler.flush(ctx);
  }

  /** The stream closed (reset, or the connection went): an upload under way is dropped. */
  void closed(int streamId) {
    Upload upload = uploads.remove(streamId);
    if (upload != null) {
      upload.timeout.cancel(false);
      upload.writer.close();
    }
  }

  private void respond(ChannelHandlerContext ctx, int streamId, FastPut.Reply reply) {
    Http2Headers headers = new DefaultHttp2Headers(false, 4)
        .status(AsciiString.of(Integer.toString(reply.status())));
    if (reply.body() == null) {
      headers.add(PUT_HEADER, reply.put()).add(HttpHeaderNames.CONTENT_LENGTH, "0")
          .add(HttpHeaderNames.DATE, HttpDate.now());
      encoder.writeHeaders(ctx, streamId, headers, 0, true, ctx.newPromise());
      return;
    }
    headers.add(HttpHeaderNames.CONTENT_TYPE, JSON)
        .add(HttpHeaderNames.CONTENT_LENGTH, Integer.toString(reply.body().length))
        .add(HttpHeaderNames.DATE, HttpDate.now());
    encoder.writeHeaders(ctx, streamId, headers, 0, false, ctx.newPromise());
    encoder.writeData(ctx, streamId, Unpooled.wrappedBuffer(reply.body()), 0, true,
        ctx.newPromise());
  }
}
