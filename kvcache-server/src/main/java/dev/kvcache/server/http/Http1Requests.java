package dev.kvcache.server.http;

import dev.kvcache.BlockWriter;
import dev.kvcache.wire.Wire;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpServerUpgradeHandler;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.util.AsciiString;
import io.netty.util.ReferenceCountUtil;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Optional;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The requests of an HTTP/1.1 connection, in a handler right after the HTTP codec, ahead of
 * Micronaut's: it has them handled one at a time, in order, and stores the PUTs it can take at
 * once itself ({@link FastPut}).
 *
 * <p><b>One at a time.</b> A client may send requests before the earlier ones are answered
 * (pipelining). Micronaut answers them in order but handles the next one as soon as the previous
 * body is read, so a GET sent after a PUT of the same key could read the block the PUT replaced
 * while the PUT was acknowledged first. Here a request goes on only once every answer before it
 * has been written (this handler sees the answers go out): what arrives meanwhile waits here, and
 * Micronaut's requests to read more ({@code autoRead} is off: it reads when it asks to) are held
 * back, so that at most one socket read waits. A client that does not pipeline sees no
 * difference.
 *
 * <p><b>PUTs taken here.</b> A PUT {@link FastPut#writerFor} takes has each piece of its body
 * (the codec's chunks, slices of what was read from the socket) copied into the block's place as
 * it arrives, without Micronaut's routing and body streams, with the answers and limits of the
 * HTTP/2 path: into RAM it costs the server 0.57–0.92 of the controller's CPU per GB
 * (docs/benchmarks/history.md); while its body arrives, this handler asks for more itself. The codec
 * frames the body by its {@code Content-Length}, so it cannot run long; a connection that closes
 * before the body's end drops what was written and frees its room. A request that expects {@code
 * 100-continue} gets its {@code 100} here; other expectations are ignored, as Micronaut and the
 * HTTP/2 path do. A chunked body, an upgrade or an HTTP/1.0 request goes to Micronaut. A body
 * slower than {@code kvcache.body-timeout} is answered 408 and the connection closed, since the
 * rest of the body would otherwise be read as the next request. A request with {@code
 * Connection: close} is answered, then its connection closed.
 */
public final class Http1Requests extends ChannelDuplexHandler {

  private static final AsciiString PUT_HEADER = AsciiString.cached(Wire.PUT_STATUS);

  private final FastPut puts;
  /** Whether PUTs of blocks are taken here at all. */
  private final boolean takePuts;
  /** Requests passed on to Micronaut whose final answer has not been written whole yet. */
  private int answersDue;
  /** Whether the answer being written is a final one (not {@code 100 Continue}). */
  private boolean finalAnswer;
  /** The request taken, while its body arrives; null between requests. */
  private Upload upload;
  /** Whether a taken request's answer is still to be written (its commit is under way). */
  private boolean answering;
  /** Messages read while an answer was due, in order. */
  private final ArrayDeque<Object> held = new ArrayDeque<>();
  /** Whether a read was asked for while messages were held. */
  private boolean readHeldBack;
  /** Whether the connection is closing after an answer: what it still reads is dropped. */
  private boolean closing;
  /** A close asked for (a graceful stop) while a PUT taken here was under way: once answered. */
  private ChannelPromise closeWhenAnswered;

  /**
   * Puts the requests of {@code puts} in an HTTP/1.1 connection's pipeline, right after the HTTP codec
   * (and the cleartext HTTP/2 upgrade handler, where there is one), ahead of Micronaut's handlers;
   * with the fast path off too, since it also keeps pipelined requests in order. Does nothing on a
   * pipeline without the codec, one that has it already, or an HTTP/2 one.
   */
  static void install(FastPut puts, ChannelPipeline pipeline) {
    install(puts, pipeline, true);
  }

  /**
   * As {@link #install(FastPut, ChannelPipeline)}; without {@code takePuts}, every request goes on
   * to Micronaut, in order (the S3 API's port, whose paths are not the block API's).
   */
  static void install(FastPut puts, ChannelPipeline pipeline, boolean takePuts) {
    if (pipeline.get(Http1Requests.class) != null
        || pipeline.get(Http2ConnectionHandler.class) != null) {
      return;
    }
    var after = pipeline.context(HttpServerUpgradeHandler.class);
    if (after == null) {
      after = pipeline.context(HttpServerCodec.class);
    }
    if (after != null) {
      pipeline.addAfter(after.name(), "kvcache-http1-requests", new Http1Requests(puts, takePuts));
    }
  }

  Http1Requests(FastPut puts, boolean takePuts) {
    this.puts = puts;
    this.takePuts = takePuts;
  }

  /** A body on its way into a writer. */
  private static final class Upload {
    final BlockWriter writer;
    final Integer checksum;
    final boolean keepAlive;
    final ScheduledFuture<?> timeout;

    Upload(BlockWriter writer, Integer checksum, boolean keepAlive, ScheduledFuture<?> timeout) {
      this.writer = writer;
      this.checksum = checksum;
      this.keepAlive = keepAlive;
      this.timeout = timeout;
    }
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (!held.isEmpty() || mustWait(msg)) {
      held.add(msg);
      return;
    }
    read(ctx, msg);
  }

  /** Whether the message must wait: a request with an answer before it still to be written. */
  private boolean mustWait(Object msg) {
    return answering || msg instanceof HttpRequest && answersDue > 0;
  }

  private void read(ChannelHandlerContext ctx, Object msg) {
    if (closing) {
      ReferenceCountUtil.release(msg);
    } else if (upload != null && msg instanceof HttpContent content) {
      body(ctx, content);
    } else if (msg instanceof HttpRequest request && take(ctx, request)) {
      if (msg instanceof HttpContent content) { // a request and its body in one message
        body(ctx, content);
      }
    } else {
      if (msg instanceof HttpRequest) {
        answersDue++;
      }
      ctx.fireChannelRead(msg);
    }
  }

  /** Whether the request is taken here: then its writer is open and its body is awaited. */
  private boolean take(ChannelHandlerContext ctx, HttpRequest request) {
    HttpHeaders headers = request.headers();
    if (!takePuts || !puts.enabled() || !request.decoderResult().isSuccess()
        || request.protocolVersion() != HttpVersion.HTTP_1_1
        || headers.contains(HttpHeaderNames.TRANSFER_ENCODING)
        || headers.contains(HttpHeaderNames.UPGRADE)) {
      return false;
    }
    String checksumHeader = headers.get(Wire.CHECKSUM);
    Integer checksum;
    Long length;
    try {
      checksum = checksumHeader == null ? null : Wire.checksum(checksumHeader);
      String declared = headers.get(HttpHeaderNames.CONTENT_LENGTH);
      length = declared == null ? null : Long.valueOf(declared);
    } catch (IllegalArgumentException e) {
      return false; // Micronaut answers with the error
    }
    Optional<BlockWriter> writer = puts.writerFor(request.method().asciiName(),
        headers.get(HttpHeaderNames.CONTENT_TYPE),
        headers.contains(HttpHeaderNames.CONTENT_ENCODING), length, request.uri(),
        headers.get(HttpHeaderNames.AUTHORIZATION), headers::get);
    if (writer.isEmpty()) {
      return false;
    }
    if (HttpUtil.is100ContinueExpected(request)) {
      ctx.writeAndFlush(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
          HttpResponseStatus.CONTINUE, Unpooled.EMPTY_BUFFER));
    }
    ScheduledFuture<?> timeout = ctx.executor().schedule(() -> timedOut(ctx),
        puts.timeoutNanos(), TimeUnit.NANOSECONDS);
    upload = new Upload(writer.get(), checksum, HttpUtil.isKeepAlive(request), timeout);
    return true;
  }

  private void body(ChannelHandlerContext ctx, HttpContent content) {
    Upload taken = upload;
    try {
      ByteBuf data = content.content();
      if (data.readableBytes() > taken.writer.remaining()) {
        end(ctx, puts.tooLong(taken.writer), false);
        return;
      }
      // the chunk's own NIO views: nioBuffer() of a composite would merge it first
      for (ByteBuffer part : data.nioBuffers()) {
        taken.writer.write(part);
      }
    } finally {
      content.release();
    }
    if (content instanceof LastHttpContent) {
      if (!content.decoderResult().isSuccess()) {
        end(ctx, null, false); // cut short: the codec closes the connection
        return;
      }
      FastPut.Reply refused = puts.refusal(taken.writer, taken.checksum);
      if (refused != null) {
        end(ctx, refused, taken.keepAlive);
        return;
      }
      upload = null;
      taken.timeout.cancel(false);
      answering = true;
      puts.commit(taken.writer, ctx.executor(), reply -> {
        answering = false;
        respond(ctx, reply, taken.keepAlive);
        readHeld(ctx);
      });
    }
  }

  /** The body did not arrive in time: answered 408, and the connection closed. */
  private void timedOut(ChannelHandlerContext ctx) {
    if (upload != null) {
      end(ctx, puts.timedOut(), false);
    }
  }

  /**
   * Ends the upload under way without storing it: answers {@code reply} (unless null) and, unless
   * {@code keepAlive}, closes the connection once the answer is out.
   */
  private void end(ChannelHandlerContext ctx, FastPut.Reply reply, boolean keepAlive) {
    Upload taken = upload;
    upload = null;
    taken.timeout.cancel(false);
    taken.writer.close();
    if (reply != null) {
      respond(ctx, reply, keepAlive);
    } else if (!keepAlive) {
      closing = true;
      ctx.close(closeWhenAnswered != null ? closeWhenAnswered : ctx.newPromise());
      closeWhenAnswered = null;
    }
  }

  private void respond(ChannelHandlerContext ctx, FastPut.Reply reply, boolean keepAlive) {
    FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
        HttpResponseStatus.valueOf(reply.status()),
        reply.body() == null ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(reply.body()));
    HttpHeaders headers = response.headers();
    if (reply.body() == null) {
      headers.set(PUT_HEADER, reply.put());
    } else {
      headers.set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
    }
    headers.set(HttpHeaderNames.CONTENT_LENGTH, response.content().readableBytes())
        .set(HttpHeaderNames.DATE, HttpDate.now());
    if (closeWhenAnswered != null) {
      headers.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
      closing = true;
      ChannelPromise close = closeWhenAnswered;
      closeWhenAnswered = null;
      ctx.writeAndFlush(response).addListener(written -> ctx.close(close));
    } else if (!keepAlive) {
      headers.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
      closing = true;
      ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
    } else {
      ctx.writeAndFlush(response);
    }
  }

  /**
   * A close from Micronaut (a graceful stop, which sees no request of its own under way) waits
   * for a PUT taken here to be answered, as it waits for its own requests.
   */
  @Override
  public void close(ChannelHandlerContext ctx, ChannelPromise promise) {
    if ((upload != null || answering) && ctx.channel().isActive()) {
      closeWhenAnswered = promise;
    } else {
      ctx.close(promise);
    }
  }

  /** Reads what arrived while an answer was due, until another answer is due. */
  private void readHeld(ChannelHandlerContext ctx) {
    if (held.isEmpty() && !readHeldBack) {
      return; // answered at once, in the read that brought the body's end
    }
    while (!held.isEmpty() && !mustWait(held.peek())) {
      read(ctx, held.poll());
    }
    if (held.isEmpty()) {
      ctx.fireChannelReadComplete(); // Micronaut handles what was passed on, and asks for more
      if (readHeldBack) {
        readHeldBack = false;
        ctx.read();
      }
    }
  }

  @Override
  public void channelReadComplete(ChannelHandlerContext ctx) {
    if (upload != null) {
      ctx.read(); // the rest of the body: Micronaut does not know it is awaited
    }
    ctx.fireChannelReadComplete();
  }

  /** Holds Micronaut's requests to read more back while messages wait here. */
  @Override
  public void read(ChannelHandlerContext ctx) {
    if (answering || !held.isEmpty()) {
      readHeldBack = true;
    } else {
      ctx.read();
    }
  }

  /**
   * Counts the answers Micronaut writes; once the last one due is written, what waited goes on
   * (after this write: Micronaut may be in the middle of its own work).
   */
  @Override
  public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
    if (msg instanceof HttpResponse response) {
      finalAnswer = response.status().codeClass() != HttpStatusClass.INFORMATIONAL;
    }
    boolean lastDue = false;
    if (msg instanceof LastHttpContent && finalAnswer) {
      finalAnswer = false;
      lastDue = --answersDue == 0;
    }
    ctx.write(msg, promise);
    if (lastDue && !held.isEmpty()) {
      ctx.executor().execute(() -> readHeld(ctx));
    }
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) throws Exception {
    if (upload != null) {
      Upload taken = upload;
      upload = null;
      taken.timeout.cancel(false);
      taken.writer.close();
    }
    closing = true;
    held.forEach(ReferenceCountUtil::release);
    held.clear();
    if (closeWhenAnswered != null) {
      ctx.close(closeWhenAnswered);
      closeWhenAnswered = null;
    }
    super.channelInactive(ctx);
  }
}
