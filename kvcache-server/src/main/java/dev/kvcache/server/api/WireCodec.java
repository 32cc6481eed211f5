package dev.kvcache.server.api;

import dev.kvcache.BlockLease;
import dev.kvcache.codec.BlockCodec;
import dev.kvcache.codec.Filter;
import dev.kvcache.server.errors.ApiException;
import dev.kvcache.wire.Wire;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micronaut.context.annotation.Context;
import io.micronaut.context.annotation.Value;
import io.micronaut.http.HttpHeaders;
import io.micronaut.http.HttpRequest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.io.IOException;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;

/**
 * Blocks on the wire in the {@link BlockCodec} container, as the content coding {@value Wire#CODING}
 * (docs/server.md). A {@code PUT} whose {@code Content-Encoding} names it is always taken, since
 * the container describes itself; a {@code GET} is answered encoded only when its {@code
 * Accept-Encoding} names the coding and {@code kvcache.wire-codec} is {@code lz4} (with {@code
 * kvcache.wire-codec-filter}, for instance {@code byte_shuffle_2} for bf16 tensors). The default,
 * {@code none}, answers every block as it is stored: on fast links compressing costs more time than
 * the bytes it saves (docs/benchmarks/codec.md).
 */
@Context // created at start-up, so that a bad setting stops the server there
public class WireCodec implements MeterBinder {

  /** The content coding's name in {@code Content-Encoding} and {@code Accept-Encoding}. */

  private final BlockCodec answers;
  private final AtomicLong sent = new AtomicLong();
  private final AtomicLong received = new AtomicLong();

  WireCodec(@Value("${kvcache.wire-codec:none}") String codec,
      @Value("${kvcache.wire-codec-filter:none}") String filter) {
    Filter f = parseFilter(filter);
    switch (codec.toLowerCase(Locale.ROOT)) {
      case "none":
        if (f != Filter.NONE) {
          throw new IllegalArgumentException(
              "kvcache.wire-codec-filter is " + filter + " but kvcache.wire-codec is none: set it to lz4");
        }
        answers = null;
        break;
      case "lz4":
        answers = BlockCodec.builder().filter(f).build();
        break;
      default:
        throw new IllegalArgumentException(
            "kvcache.wire-codec must be none or lz4, got '" + codec + "'");
    }
  }

  private static Filter parseFilter(String name) {
    for (Filter f : Filter.values()) {
      if (f.name().equalsIgnoreCase(name)) {
        return f;
      }
    }
    throw new IllegalArgumentException("kvcache.wire-codec-filter must be one of "
        + java.util.Arrays.toString(Filter.values()).toLowerCase(Locale.ROOT) + ", got '" + name + "'");
  }

  /** Whether a body with this {@code Content-Encoding} is a container; null means none. */
  static boolean isEncoded(String contentEncoding) {
    if (contentEncoding == null || contentEncoding.equalsIgnoreCase("identity")) {
      return false;
    }
    if (contentEncoding.trim().equalsIgnoreCase(Wire.CODING)) {
      return true;
    }
    throw new ApiException(io.micronaut.http.HttpStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported-encoding",
        "Content-Encoding '" + contentEncoding + "' is not taken; send the block as it is or as "
            + Wire.CODING);
  }

  /** Whether to answer {@code request} with an encoded block. */
  public boolean encodesFor(HttpRequest<?> request) {
    return answers != null && encodesFor(request.getHeaders().getAll(HttpHeaders.ACCEPT_ENCODING));
  }

  /** Whether to answer a request with these {@code Accept-Encoding} values with an encoded block. */
  public boolean encodesFor(Iterable<? extends CharSequence> acceptEncoding) {
    if (answers == null) {
      return false;
    }
    for (CharSequence value : acceptEncoding) {
      for (String coding : value.toString().split(",")) {
        String[] parts = coding.split(";");
        if (parts[0].trim().equalsIgnoreCase(Wire.CODING) && quality(parts) > 0) {
          return true;
        }
      }
    }
    return false;
  }

  /** The {@code q} parameter among a coding's {@code parts}: 1 when absent, 0 when unreadable. */
  private static double quality(String[] parts) {
    for (int i = 1; i < parts.length; i++) {
      String p = parts[i].trim();
      if (p.startsWith("q=") || p.startsWith("Q=")) {
        try {
          return Double.parseDouble(p.substring(2).trim());
        } catch (NumberFormatException e) {
          return 0;
        }
      }
    }
    return 1;
  }

  /** Counts a block stored from a container. */
  void received() {
    received.incrementAndGet();
  }

  /** {@code kvcache_wire_containers_total}, by direction: blocks answered and taken encoded. */
  @Override
  public void bindTo(MeterRegistry registry) {
    for (String direction : new String[] {"sent", "received"}) {
      FunctionCounter.builder("kvcache.wire.containers",
              direction.equals("sent") ? sent : received, AtomicLong::get)
          .description("blocks answered (sent) or stored (received) as " + Wire.CODING + " containers")
          .tag("direction", direction)
          .register(registry);
    }
  }

  /**
   * The leased block encoded, chunk by chunk on {@code on}: each chunk goes out as soon as it is
   * encoded (copied from the codec's chunk buffer into a pooled one), so encoding the next chunk
   * overlaps sending this one. Closes the lease when done, or at once if the answer is cancelled
   * before encoding started; stops early if it is cancelled meanwhile.
   */
  Flux<ByteBuf> encode(BlockLease lease, Scheduler on) {
    AtomicBoolean owned = new AtomicBoolean(); // by the encoder, or by a cancel before it started
    return Flux.<ByteBuf>create(sink -> {
          if (!owned.compareAndSet(false, true)) {
            return; // cancelled before it started: the lease is closed already
          }
          try (lease) {
            answers.encode(lease.bytes(), new ChunkChannel(chunk -> {
              if (sink.isCancelled()) {
                throw new IOException("the answer was cancelled");
              }
              sink.next(ByteBufAllocator.DEFAULT.directBuffer(chunk.remaining()).writeBytes(chunk));
            }));
            sent.incrementAndGet();
            sink.complete();
          } catch (IOException | RuntimeException e) {
            sink.error(e);
          }
        })
        .subscribeOn(on)
        .doOnDiscard(ByteBuf.class, ByteBuf::release)
        .doFinally(signal -> {
          if (owned.compareAndSet(false, true)) {
            lease.close();
          }
        });
  }
}
