package dev.kvcache.server;

import dev.kvcache.BlockLease;
import dev.kvcache.codec.BlockCodec;
import dev.kvcache.codec.Filter;
import io.micronaut.context.annotation.Value;
import io.micronaut.http.HttpHeaders;
import io.micronaut.http.HttpRequest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.micronaut.context.annotation.Context;
import java.util.Locale;

/**
 * Blocks on the wire in the {@link BlockCodec} container, as the content coding {@value #CODING}
 * (docs/server.md). A {@code PUT} whose {@code Content-Encoding} names it is always taken, since
 * the container describes itself; a {@code GET} is answered encoded only when its {@code
 * Accept-Encoding} names the coding and {@code kvcache.wire-codec} is {@code lz4} (with {@code
 * kvcache.wire-codec-filter}, for instance {@code byte_shuffle_2} for bf16 tensors). The default,
 * {@code none}, answers every block as it is stored: on fast links compressing costs more time than
 * the bytes it saves (docs/benchmarks.md).
 */
@Context // created at start-up, so that a bad setting stops the server there
class WireCodec {

  /** The content coding's name in {@code Content-Encoding} and {@code Accept-Encoding}. */
  static final String CODING = "kvcache-lz4";

  private final BlockCodec answers;

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

  /**
   * The most bytes a container of a block up to {@code maxBlockBytes} can take, whatever chunk size
   * its writer chose: the bound on an encoded body.
   */
  static long maxEncodedLength(int maxBlockBytes) {
    return BlockCodec.builder().chunkSizeBytes(4 << 10).build().maxEncodedLength(maxBlockBytes);
  }

  /** Whether a body with this {@code Content-Encoding} is a container; null means none. */
  static boolean isEncoded(String contentEncoding) {
    if (contentEncoding == null || contentEncoding.equalsIgnoreCase("identity")) {
      return false;
    }
    if (contentEncoding.trim().equalsIgnoreCase(CODING)) {
      return true;
    }
    throw new ApiException(io.micronaut.http.HttpStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported-encoding",
        "Content-Encoding '" + contentEncoding + "' is not taken; send the block as it is or as "
            + CODING);
  }

  /** Whether to answer {@code request} with an encoded block. */
  boolean encodesFor(HttpRequest<?> request) {
    if (answers == null) {
      return false;
    }
    for (String value : request.getHeaders().getAll(HttpHeaders.ACCEPT_ENCODING)) {
      for (String coding : value.split(",")) {
        String[] parts = coding.split(";");
        if (parts[0].trim().equalsIgnoreCase(CODING) && quality(parts) > 0) {
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

  /** The leased block encoded, in a buffer of Netty's; closes the lease. */
  ByteBuf encode(BlockLease lease) {
    try (lease) {
      int length = lease.length();
      ByteBuf out = ByteBufAllocator.DEFAULT.directBuffer((int) answers.maxEncodedLength(length));
      try {
        int n = answers.encode(lease.bytes(), out.nioBuffer(0, out.capacity()));
        return out.writerIndex(n);
      } catch (RuntimeException e) {
        out.release();
        throw e;
      }
    }
  }
}
