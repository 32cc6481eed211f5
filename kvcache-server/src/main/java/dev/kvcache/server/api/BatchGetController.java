package dev.kvcache.server.api;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.server.access.Access;
import dev.kvcache.server.access.Access.Right;
import dev.kvcache.server.access.Namespaces;
import dev.kvcache.server.cache.SizeSetting;
import dev.kvcache.server.errors.ApiException;
import dev.kvcache.spi.Crc32c;
import dev.kvcache.wire.Wire;
import io.micronaut.context.annotation.Context;
import io.micronaut.context.annotation.Value;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.MediaType;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.serde.annotation.Serdeable;
import io.netty.buffer.ByteBuf;
import java.util.ArrayList;
import java.util.List;
import reactor.core.publisher.Mono;

/**
 * Many blocks in one answer: the blocks of a list of keys, back to back in one stream, each
 * written from the cache's memory as a single GET's is. For blocks of a few hundred KiB, one
 * stream per block costs more per byte than the bytes themselves (docs/benchmarks/server.md).
 *
 * <p>The answer's {@value Wire#BLOCK_LENGTHS} header gives, for each key in order, the length of its
 * block in the body, or 0 if it is not cached. It may cover fewer keys than were asked for, when
 * the blocks found would add up to more than {@code kvcache.max-batch-bytes}; the client asks
 * again for the rest. At least one key is always answered. Its {@value Wire#BLOCK_CHECKSUMS} header
 * gives the CRC32C of each block in the body, in the body's order (keys not cached have none), in
 * the form of a single block's {@value Wire#CHECKSUM}.
 */
@Controller(Wire.NAMESPACES + "{namespace}")
@Context // built at the start, so that a malformed kvcache.max-batch-bytes stops it
public class BatchGetController {

  /** The most keys one batch takes. */
  public static final int MAX_KEYS = 256;
  /**
   * Keys leased at once: a tier that reads from far away (an object store) has this many reads
   * under way, and past the byte limit at most this many are read and let go of.
   */
  private static final int WINDOW = 16;



  private final KvCache cache;
  private final Namespaces namespaces;
  private final long maxBatchBytes;
  private final ServedBlocks served;
  private final OffLoop offLoop;

  BatchGetController(KvCache cache, Namespaces namespaces, ServedBlocks served, OffLoop offLoop,
      @Value("${kvcache.max-batch-bytes:64MiB}") String maxBatchBytes) {
    this.cache = cache;
    this.offLoop = offLoop;
    this.namespaces = namespaces;
    this.served = served;
    this.maxBatchBytes = SizeSetting.bytes("kvcache.max-batch-bytes", maxBatchBytes, 1);
  }

  /**
   * The keys whose blocks to send, in the order wanted.
   *
   * @param keys hex keys, 1 to {@value BatchGetController#MAX_KEYS}
   */
  @Serdeable
  record BatchGetRequest(List<String> keys) {}

  /**
   * Leases the blocks, {@value #WINDOW} keys at a time, and answers them all from the leases,
   * which close once the body is written; every key is checked before any block is leased. The
   * blocks are leased on a blocking thread if the cache's reads may wait ({@link OffLoop}).
   */
  @Access(Right.READ)
  @Post(uri = "/batch-get", produces = MediaType.APPLICATION_OCTET_STREAM)
  Mono<HttpResponse<ByteBuf>> batchGet(String namespace, @Body BatchGetRequest request) {
    List<String> hexKeys = request.keys();
    if (hexKeys == null || hexKeys.isEmpty() || hexKeys.size() > MAX_KEYS) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-batch", "the body needs a 'keys' list of 1 to "
          + MAX_KEYS + " keys, got " + (hexKeys == null ? "none" : hexKeys.size()));
    }
    List<BlockKey> keys = namespaces.storageKeys(namespace, hexKeys);
    return offLoop.answer(() -> answer(namespace, keys));
  }

  /** The answer: the blocks' leases, a window at a time, up to the batch's byte limit. */
  private HttpResponse<ByteBuf> answer(String namespace, List<BlockKey> keys) {
    List<BlockLease> leases = new ArrayList<>(keys.size());
    StringBuilder lengths = new StringBuilder(keys.size() * 8);
    StringBuilder checksums = new StringBuilder(keys.size() * 9);
    long total = 0;
    List<BlockLease> window = List.of();
    int taken = 0; // leases of the window handed on or closed
    try {
      boolean full = false;
      for (int from = 0; from < keys.size() && !full; from += WINDOW) {
        window = cache.getAll(keys.subList(from, Math.min(keys.size(), from + WINDOW)));
        for (taken = 0; taken < window.size(); ) {
          BlockLease lease = window.get(taken++);
          int length = lease.status() == GetStatus.HIT ? lease.length() : 0;
          full |= length > 0 && total + length > maxBatchBytes && !leases.isEmpty();
          if (full || length == 0) {
            lease.close(); // a miss; or, past the byte limit, left to the client's next batch
          } else {
            leases.add(lease);
            total += length;
            checksums.append(checksums.length() == 0 ? "" : ",")
                .append(Wire.checksum(Crc32c.of(lease)));
          }
          if (!full) {
            lengths.append(lengths.length() == 0 ? "" : ",").append(length);
          }
        }
      }
    } catch (RuntimeException e) {
      leases.forEach(BlockLease::close);
      window.subList(taken, window.size()).forEach(BlockLease::close);
      throw e;
    }
    return HttpResponse.ok((ByteBuf) served.batchBody(namespace, leases))
        .header(Wire.BLOCK_LENGTHS, lengths)
        .header(Wire.BLOCK_CHECKSUMS, checksums);
  }
}
