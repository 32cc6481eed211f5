package dev.kvcache.server.api;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockWriter;
import dev.kvcache.KvCache;
import dev.kvcache.PutStatus;
import dev.kvcache.codec.BlockCodec;
import dev.kvcache.codec.BlockDecoder;
import dev.kvcache.codec.CorruptBlockException;
import dev.kvcache.server.errors.ApiException;
import dev.kvcache.wire.Wire;
import io.micronaut.http.HttpStatus;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.Optional;
import java.util.function.UnaryOperator;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Streams a request body into the cache. With a {@code Content-Length}, a {@link BlockWriter} is
 * opened before the body is read, and each chunk is copied once, from Netty's buffer into the
 * block's place in the cache. A chunked body's length is known only at its end: its chunks are
 * kept as Netty received them (no copy), up to the largest block, and written when it ends.
 *
 * <p>Either way an oversized or lying body is refused as soon as it shows, and a writer that
 * reserved room is closed on every path (error, timeout, cancel), which frees the room unless the
 * block was committed.
 */
public final class BodyWriter {

  /** Chunks of a body queued for a writer on another thread (HTTP/2 DATA frames: 16 KiB each). */
  private static final int CHUNKS_IN_FLIGHT = 32;

  private BodyWriter() {}

  /**
   * The outcome of storing the body under {@code key}. Chunks are copied where they arrive when
   * the cache opens the writer without waiting; otherwise opening it, writing the chunks and
   * committing run on {@code blocking}.
   *
   * @param declared the request's {@code Content-Length}, or -1 for a chunked body
   * @param maxBytes the largest body taken
   * @param tag what the cache's writer is wrapped in ({@code EngineBlocks.tag})
   */
  public static Mono<PutStatus> store(KvCache cache, BlockKey key, Publisher<ByteBuf> body,
      long declared, int maxBytes, Scheduler blocking, Integer checksum,
      UnaryOperator<BlockWriter> tag) {
    if (declared == 0) {
      return Mono.error(emptyBlock());
    }
    if (declared > 0) {
      return streamed(cache, key, Flux.from(body), (int) declared, blocking, checksum, tag);
    }
    return gathered(cache, key, body, maxBytes, blocking, checksum, tag);
  }

  /**
   * The error for a block whose bytes do not have the CRC32C its client sent ({@value
   * Wire#CHECKSUM}), or null if they do or none was sent. The writer computed the checksum as the
   * bytes went in; a caller that gets an error closes the writer, so nothing is stored.
   */
  public static ApiException checksumMismatch(BlockWriter writer, Integer expected) {
    if (expected == null || writer.crc32c().isEmpty() || writer.crc32c().getAsInt() == expected) {
      return null;
    }
    return new ApiException(HttpStatus.BAD_REQUEST, "checksum-mismatch", "the body's CRC32C is "
        + Wire.checksum(writer.crc32c().getAsInt()) + ", its " + Wire.CHECKSUM + " header says "
        + Wire.checksum(expected) + "; nothing was stored");
  }

  /**
   * Opens the writer where the body arrives if the cache can do that without waiting (usually:
   * RAM has room), and then commits there too; otherwise both run on {@code blocking}. The two
   * hops to another thread cost about 40 µs per PUT, a fifth of a small one (docs/benchmarks/history.md).
   * A writer opened on {@code blocking} after its request went away (its connection closed while
   * the cache made room) is closed as soon as it is open, which frees its room: {@code
   * Mono.using} closes what it opened on every end, a cancel included, where a value produced by
   * {@code Mono.fromCallable(..).subscribeOn(..)} after a cancel is dropped without a discard.
   */
  private static Mono<PutStatus> streamed(KvCache cache, BlockKey key, Flux<ByteBuf> body,
      int length, Scheduler blocking, Integer checksum, UnaryOperator<BlockWriter> tag) {
    return Mono.defer(() -> {
      Optional<BlockWriter> now = cache.tryWriter(key, length).map(tag);
      if (now.isPresent()) {
        return write(now.get(), body, Schedulers.immediate(), blocking, checksum);
      }
      return Mono.using(() -> tag.apply(cache.writer(key, length)),
              writer -> write(writer, body,
                  writer.writesMayWait() ? blocking : Schedulers.immediate(), blocking, checksum),
              BlockWriter::close)
          .subscribeOn(blocking);
    });
  }

  /**
   * Writes the body's chunks and commits, on {@code on}: where the body arrives (an event loop)
   * for a writer that copies into memory, or on {@code blocking} for one whose writes may wait (a
   * block RAM cannot take goes to the disk tier's writer, which writes the parts to its file),
   * each chunk handed over to it. A commit where the body arrives that may wait ({@link
   * BlockWriter#tryCommit}) runs on {@code blocking} instead. A writer that had to wait for room
   * was opened on {@code blocking}, and still takes its chunks where they arrive if it copies them
   * into memory: handing each over to another thread costs more than the copy.
   */
  private static Mono<PutStatus> write(BlockWriter writer, Flux<ByteBuf> body, Scheduler on,
      Scheduler blocking, Integer checksum) {
    if (writer.rejection().isPresent()) {
      return Mono.just(writer.rejection().get());
    }
    Flux<ByteBuf> chunks = on == Schedulers.immediate()
        ? body
        : body.publishOn(on, CHUNKS_IN_FLIGHT)
            .doOnDiscard(ByteBuf.class, ReferenceCountUtil::safeRelease);
    return chunks.doOnNext(chunk -> append(writer, chunk))
        .then(Mono.defer(() -> {
          if (on != Schedulers.immediate()) {
            return Mono.fromCallable(() -> commit(writer, checksum)).subscribeOn(on);
          }
          Optional<PutStatus> now = commitIfNoWait(writer, checksum);
          return now.isPresent() ? Mono.just(now.get())
              : Mono.fromCallable(() -> commit(writer, checksum)).subscribeOn(blocking);
        }))
        .doFinally(signal -> writer.close());
  }

  private static void append(BlockWriter writer, ByteBuf chunk) {
    try {
      if (chunk.readableBytes() > writer.remaining()) {
        throw new ApiException(HttpStatus.BAD_REQUEST, "length-mismatch",
            "the body is longer than its Content-Length, " + writer.length() + " bytes");
      }
      // the chunk's own NIO views: ByteBuf.nioBuffer() of a composite would merge it first
      for (ByteBuffer part : chunk.nioBuffers()) {
        writer.write(part);
      }
    } finally {
      chunk.release();
    }
  }

  private static PutStatus commit(BlockWriter writer, Integer checksum) {
    checkBody(writer, checksum);
    return writer.commit();
  }

  /** As {@link #commit}, if that need not wait ({@link BlockWriter#tryCommit}); empty if not. */
  private static Optional<PutStatus> commitIfNoWait(BlockWriter writer, Integer checksum) {
    checkBody(writer, checksum);
    return writer.tryCommit();
  }

  /** Throws the error for a body shorter than its length, or without the checksum sent with it. */
  private static void checkBody(BlockWriter writer, Integer checksum) {
    if (writer.remaining() != 0) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "length-mismatch", "the body ended after "
          + (writer.length() - writer.remaining()) + " of its Content-Length's "
          + writer.length() + " bytes");
    }
    ApiException mismatch = checksumMismatch(writer, checksum);
    if (mismatch != null) {
      throw mismatch;
    }
  }

  /** A chunked body, kept as the buffers it arrived in until it ends, then written. */
  private static Mono<PutStatus> gathered(KvCache cache, BlockKey key, Publisher<ByteBuf> body,
      int maxBytes, Scheduler blocking, Integer checksum, UnaryOperator<BlockWriter> tag) {
    return Mono.using(
        () -> ByteBufAllocator.DEFAULT.compositeDirectBuffer(Integer.MAX_VALUE),
        whole -> gather(body, whole, maxBytes)
            .then(Mono.defer(() -> whole.readableBytes() == 0
                ? Mono.error(emptyBlock())
                // the writer releases what it is given; Mono.using releases the rest
                : streamed(cache, key, Flux.defer(() -> Flux.just(whole.retain())),
                    whole.readableBytes(), blocking, checksum, tag))),
        CompositeByteBuf::release);
  }

  /** Adds the body's buffers to {@code whole} as they arrive (no copy), up to {@code maxBytes}. */
  private static Mono<Void> gather(Publisher<ByteBuf> body, CompositeByteBuf whole, int maxBytes) {
    return Flux.from(body)
        .doOnNext(chunk -> {
          if ((long) whole.readableBytes() + chunk.readableBytes() > maxBytes) {
            chunk.release();
            throw new ApiException(HttpStatus.REQUEST_ENTITY_TOO_LARGE, "too-large",
                "the body is larger than this server's largest block, " + maxBytes + " bytes");
          }
          whole.addComponent(true, chunk);
        })
        .then();
  }

  /**
   * Stores a body encoded as a {@link BlockCodec} container ({@link Wire#CODING}), decoded as
   * it arrives, on {@code blocking}: once the container's header is in, a writer is opened for the
   * length it gives, and each chunk is decoded into it as soon as the chunk is whole and checked
   * (memory: one encoded and one decoded chunk). A block longer than {@code maxBlockBytes} is 413,
   * a damaged container 400; either way nothing is stored.
   */
  static Mono<PutStatus> storeEncoded(KvCache cache, BlockKey key, Publisher<ByteBuf> body,
      int maxBlockBytes, Scheduler blocking, Integer checksum, UnaryOperator<BlockWriter> tag) {
    return Mono.using(
        () -> new EncodedBlock(cache, key, maxBlockBytes, checksum, tag),
        block -> Flux.from(body)
            .publishOn(blocking, CHUNKS_IN_FLIGHT)
            .doOnDiscard(ByteBuf.class, ReferenceCountUtil::safeRelease)
            .doOnNext(block::write)
            .then(Mono.fromCallable(block::commit)),
        EncodedBlock::close);
  }

  /** A block decoded from its container into a writer as the container's bytes arrive. */
  private static final class EncodedBlock implements BlockDecoder.Sink {
    private final KvCache cache;
    private final BlockKey key;
    private final int maxBlockBytes;
    private final Integer checksum;
    private final UnaryOperator<BlockWriter> tag;
    private final BlockDecoder decoder = BlockCodec.decoder(this);
    private BlockWriter writer;

    EncodedBlock(KvCache cache, BlockKey key, int maxBlockBytes, Integer checksum,
        UnaryOperator<BlockWriter> tag) {
      this.cache = cache;
      this.key = key;
      this.maxBlockBytes = maxBlockBytes;
      this.checksum = checksum;
      this.tag = tag;
    }

    @Override
    public void start(long length) {
      if (length == 0) {
        throw emptyBlock();
      }
      if (length > maxBlockBytes) {
        throw new ApiException(HttpStatus.REQUEST_ENTITY_TOO_LARGE, "too-large", "a block of "
            + length + " bytes is larger than this server's largest, " + maxBlockBytes);
      }
      writer = tag.apply(cache.writer(key, (int) length));
    }

    @Override
    public void accept(ByteBuffer chunk) {
      if (writer.rejection().isEmpty()) {
        writer.write(chunk);
      }
    }

    /** Decodes what {@code chunk} completes; a writer that was rejected takes nothing. */
    void write(ByteBuf chunk) {
      try {
        // the chunk's own NIO views: ByteBuf.nioBuffer() of a composite would merge it first
        for (ByteBuffer part : chunk.nioBuffers()) {
          decoder.write(part);
        }
      } catch (CorruptBlockException e) {
        throw corrupt(e);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      } finally {
        chunk.release();
      }
    }

    PutStatus commit() {
      try {
        decoder.finish();
      } catch (CorruptBlockException e) {
        throw corrupt(e);
      }
      if (writer.rejection().isPresent()) {
        return writer.rejection().get();
      }
      ApiException mismatch = checksumMismatch(writer, checksum);
      if (mismatch != null) {
        throw mismatch;
      }
      return writer.commit();
    }

    void close() {
      decoder.close();
      if (writer != null) {
        writer.close();
      }
    }

    private static ApiException corrupt(CorruptBlockException e) {
      return new ApiException(HttpStatus.BAD_REQUEST, "corrupt-body",
          "the body is not a whole " + Wire.CODING + " container: " + e.getMessage());
    }
  }

  /** The error for a PUT whose body is empty: a block has at least one byte. */
  static ApiException emptyBlock() {
    return new ApiException(HttpStatus.BAD_REQUEST, "empty-block", "a block cannot be empty");
  }
}
