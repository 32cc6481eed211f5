package dev.kvcache.server;

import io.micronaut.http.HttpStatus;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Gathers a streamed request body into one pooled direct buffer as its chunks arrive, enforcing
 * the largest block and the declared {@code Content-Length} on the way, so an oversized or lying
 * body is refused as soon as it shows, not after it was read whole.
 */
final class BodyCollector {

  private static final int INITIAL_BYTES_WITHOUT_LENGTH = 64 * 1024;

  private BodyCollector() {}

  /**
   * The body's bytes, in a buffer the subscriber must release.
   *
   * @param declared the request's {@code Content-Length}, or -1 for a chunked body
   * @param maxBytes the largest body taken
   */
  static Mono<ByteBuf> collect(Publisher<ByteBuf> body, long declared, int maxBytes) {
    int initial = declared >= 0 ? (int) declared : INITIAL_BYTES_WITHOUT_LENGTH;
    return Mono.using(
        () -> ByteBufAllocator.DEFAULT.directBuffer(Math.max(initial, 1), maxBytes),
        block -> Flux.from(body)
            .doOnNext(chunk -> append(block, chunk, declared, maxBytes))
            .then(Mono.fromCallable(() -> finish(block, declared))),
        ByteBuf::release);
  }

  private static void append(ByteBuf block, ByteBuf chunk, long declared, int maxBytes) {
    try {
      long total = (long) block.readableBytes() + chunk.readableBytes();
      if (total > maxBytes) {
        throw new ApiException(HttpStatus.REQUEST_ENTITY_TOO_LARGE, "too-large",
            "the body is larger than this server's largest block, " + maxBytes + " bytes");
      }
      if (declared >= 0 && total > declared) {
        throw new ApiException(HttpStatus.BAD_REQUEST, "length-mismatch",
            "the body is longer than its Content-Length, " + declared + " bytes");
      }
      // through an NIO view: ByteBuf.writeBytes of a composite chunk would first merge its
      // components into a new heap buffer
      int n = chunk.readableBytes();
      block.ensureWritable(n);
      chunk.getBytes(chunk.readerIndex(), block.nioBuffer(block.writerIndex(), n));
      block.writerIndex(block.writerIndex() + n);
    } finally {
      chunk.release();
    }
  }

  private static ByteBuf finish(ByteBuf block, long declared) {
    if (declared >= 0 && block.readableBytes() != declared) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "length-mismatch", "the body ended after "
          + block.readableBytes() + " of its Content-Length's " + declared + " bytes");
    }
    if (block.readableBytes() == 0) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "empty-block", "a block cannot be empty");
    }
    return block.retain(); // one reference for the subscriber; Mono.using drops its own
  }
}
