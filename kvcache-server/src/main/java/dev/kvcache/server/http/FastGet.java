package dev.kvcache.server.http;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.server.access.Namespaces;
import dev.kvcache.server.access.TokenSettings;
import dev.kvcache.server.access.Tokens;
import dev.kvcache.server.api.BlockController;
import dev.kvcache.server.api.OffLoop;
import dev.kvcache.server.api.ServedBlocks;
import dev.kvcache.server.api.WireCodec;
import dev.kvcache.server.errors.ApiException;
import dev.kvcache.spi.Crc32c;
import dev.kvcache.wire.Wire;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micronaut.context.annotation.Value;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2ConnectionEncoder;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2FrameListener;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.util.AsciiString;
import jakarta.inject.Singleton;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Answers the commonest request, an HTTP/2 {@code GET} of one cached block, straight from the
 * HTTP/2 frames: headers and the block (from its lease, as {@link BlockController#get} sends it),
 * without Micronaut's routing, filters and response building, which cost as much CPU as writing a
 * 256 KiB block to the socket (docs/benchmarks/server.md). Everything else goes to Micronaut unchanged:
 * other methods and paths, HTTP/1.1, a miss, a block RAM does not hold (read off the event loop,
 * {@link OffLoop}), a malformed key, an unknown namespace, a token that is missing or may not read
 * the namespace, a request for an encoded block. Those get Micronaut's answers (404, 400, 401,
 * 403, ...), so the fast path only ever answers 200 with the same headers and bytes as the
 * controller. Off with {@code kvcache.fast-get: false}. Requests it answers are
 * counted by the cache's own meters ({@code kvcache_hits_total}) and by {@code
 * kvcache_fast_gets_total}, not by Micronaut's HTTP timer.
 */
@Singleton
public class FastGet implements MeterBinder {

  private static final String BLOCKS = "/blocks/";
  private static final AsciiString LENGTH_HEADER = AsciiString.cached(Wire.BLOCK_LENGTH);
  private static final AsciiString CHECKSUM_HEADER = AsciiString.cached(Wire.CHECKSUM);
  private static final AsciiString OCTET_STREAM = AsciiString.cached("application/octet-stream");
  private static final AsciiString OK = AsciiString.cached("200");

  private final boolean enabled;
  private final KvCache cache;
  private final Namespaces namespaces;
  private final Tokens tokens;
  private final WireCodec wire;
  private final ServedBlocks served;
  private final AtomicLong answered = new AtomicLong();

  FastGet(@Value("${kvcache.fast-get:true}") boolean enabled, KvCache cache, Namespaces namespaces,
      Tokens tokens, WireCodec wire, ServedBlocks served) {
    this.enabled = enabled;
    this.cache = cache;
    this.namespaces = namespaces;
    this.tokens = tokens;
    this.wire = wire;
    this.served = served;
  }

  /** Puts the fast path in front of the connection's frame listener (Micronaut's). */
  void install(Http2ConnectionHandler handler) {
    if (enabled) {
      handler.decoder().frameListener(new Listener(handler.decoder().frameListener(),
          handler.encoder()));
    }
  }

  /** GETs answered here. */
  public long answered() {
    return answered.get();
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    FunctionCounter.builder("kvcache.fast.gets", answered, AtomicLong::get)
        .description("GETs of cached blocks answered ahead of Micronaut's routing")
        .register(registry);
  }

  /**
   * The namespace and key of a {@code /v1/namespaces/{namespace}/blocks/{key}} path without a
   * query, as they stand (not yet checked), or null for any other path.
   */
  public static String[] blockPath(CharSequence p) {
    String path = p == null ? null : p.toString();
    if (path == null || !path.startsWith(Wire.NAMESPACES) || path.indexOf('?') >= 0) {
      return null;
    }
    int blocks = path.indexOf(BLOCKS, Wire.NAMESPACES.length());
    if (blocks < 0 || path.indexOf('/', blocks + BLOCKS.length()) >= 0) {
      return null;
    }
    return new String[] {path.substring(Wire.NAMESPACES.length(), blocks), path.substring(blocks + BLOCKS.length())};
  }

  /** A GET the fast path answers: its namespace and its block's lease. */
  private record Hit(String namespace, BlockLease lease) {}

  /** The block's lease if this request is a GET the fast path answers, else null. */
  private Hit hit(Http2Headers headers) {
    if (!AsciiString.contentEquals("GET", headers.method())) {
      return null;
    }
    String[] target = blockPath(headers.path());
    if (target == null) {
      return null;
    }
    String namespace = target[0];
    if (tokens.enabled()) {
      TokenSettings token = tokens.bearer(headers.get(HttpHeaderNames.AUTHORIZATION));
      if (token == null || !token.getRead().contains(namespace)) {
        return null;
      }
    }
    if (wire.encodesFor(headers.getAll(HttpHeaderNames.ACCEPT_ENCODING))) {
      return null;
    }
    BlockKey key;
    try {
      key = namespaces.storageKey(namespace, target[1]);
    } catch (ApiException e) {
      return null; // Micronaut answers with the error
    }
    // a block RAM lacks may be read from a device or the network: Micronaut's route does that
    // off the event loop (OffLoop)
    BlockLease lease = cache.tryGet(key).orElse(null);
    if (lease == null || lease.status() != GetStatus.HIT) {
      if (lease != null) {
        lease.close();
      }
      return null;
    }
    return new Hit(namespace, lease);
  }

  private final class Listener extends RequestFrameStage {
    private final Http2ConnectionEncoder encoder;

    Listener(Http2FrameListener micronaut, Http2ConnectionEncoder encoder) {
      super(micronaut);
      this.encoder = encoder;
    }

    @Override
    public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers,
        int streamDependency, short weight, boolean exclusive, int padding, boolean endOfStream)
        throws Http2Exception {
      if (!endOfStream || !answer(ctx, streamId, headers)) {
        super.onHeadersRead(ctx, streamId, headers, streamDependency, weight, exclusive, padding,
            endOfStream);
      }
    }

    /** Writes the answer if this is a GET of a cached block; flushed when the read completes. */
    private boolean answer(ChannelHandlerContext ctx, int streamId, Http2Headers request) {
      Hit hit = hit(request);
      if (hit == null) {
        return false;
      }
      BlockLease lease = hit.lease();
      String length = Integer.toString(lease.length());
      Http2Headers response = new DefaultHttp2Headers(false, 6)
          .status(OK)
          .add(HttpHeaderNames.CONTENT_TYPE, OCTET_STREAM)
          .add(HttpHeaderNames.CONTENT_LENGTH, length)
          .add(LENGTH_HEADER, length)
          .add(HttpHeaderNames.DATE, HttpDate.now());
      response.add(CHECKSUM_HEADER, Wire.checksum(Crc32c.of(lease)));
      // the lease closes when Netty releases the body
      ByteBuf body = served.getBody(hit.namespace(), lease);
      encoder.writeHeaders(ctx, streamId, response, 0, false, ctx.voidPromise());
      encoder.writeData(ctx, streamId, body, 0, true, ctx.voidPromise());
      answered.incrementAndGet();
      return true;
    }
  }
}
