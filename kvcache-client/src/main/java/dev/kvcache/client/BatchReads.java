package dev.kvcache.client;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.spi.LoadRate;
import dev.kvcache.spi.TierCounters;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads of many blocks at once ({@link RemoteTier#getAllInto}): one batch request per server for
 * the keys it holds (up to {@value #MAX_BATCH_KEYS} keys each), all under way at once; each block
 * lands in the buffer at its key's index as its bytes arrive. Keys a server left for a later
 * batch (its answers are bounded in bytes) are asked for again; a batch that failed is tried once
 * more for the keys it had not answered whole, which are then misses.
 */
final class BatchReads {

  private static final Logger log = LoggerFactory.getLogger(BatchReads.class);
  /** The most keys in one batch request (the server's limit). */
  private static final int MAX_BATCH_KEYS = 256;

  private final RemoteTierConfig config;
  private final Protocol protocol;
  private final ServerDirectory directory;
  private final Requests requests;
  private final TierCounters counters;
  private final LoadRate loadRate;

  BatchReads(RemoteTierConfig config, Protocol protocol, ServerDirectory directory,
      Requests requests, TierCounters counters, LoadRate loadRate) {
    this.config = config;
    this.protocol = protocol;
    this.directory = directory;
    this.requests = requests;
    this.counters = counters;
    this.loadRate = loadRate;
  }

  /** See {@link RemoteTier#getAllInto}; the arguments are checked. */
  GetStatus[] getAllInto(List<BlockKey> keys, List<ByteBuffer> dsts) {
    long start = System.nanoTime();
    int[] positions = new int[keys.size()];
    for (int i = 0; i < positions.length; i++) {
      positions[i] = dsts.get(i).position();
    }
    GetStatus[] result = new GetStatus[keys.size()];
    int[] damage = new int[keys.size()];
    List<Integer> open = IntStream.range(0, keys.size()).boxed().toList();
    boolean retryLeft = true;
    while (!open.isEmpty()) {
      List<Batch> batches = startBatches(keys, dsts, open);
      boolean failed = false;
      RemoteTierException refused = null;
      for (Batch b : batches) {
        try {
          failed |= !b.finish(keys, result, damage);
        } catch (RemoteTierException e) {
          refused = e; // thrown once every batch is done with the caller's buffers
        }
      }
      if (refused != null) {
        throw refused;
      }
      List<Integer> left = new ArrayList<>();
      for (int i : open) {
        if (result[i] == null) {
          left.add(i);
        }
      }
      if (failed ? !retryLeft : left.size() == open.size()) {
        break; // no more tries, or no progress
      }
      retryLeft &= !failed;
      open = left;
    }
    count(result, dsts, positions, System.nanoTime() - start);
    return result;
  }

  /** Counts the hits and misses, and shares the batch's time among its blocks by their bytes. */
  private void count(GetStatus[] result, List<ByteBuffer> dsts, int[] positions, long nanos) {
    long bytes = 0;
    for (int i = 0; i < result.length; i++) {
      if (result[i] == null) {
        result[i] = GetStatus.MISS;
      }
      if (result[i] == GetStatus.HIT) {
        counters.hit();
        bytes += dsts.get(i).position() - positions[i];
      } else if (result[i] == GetStatus.MISS) {
        counters.miss();
      }
    }
    for (int i = 0; i < result.length && bytes > 0; i++) {
      if (result[i] == GetStatus.HIT) {
        long length = dsts.get(i).position() - positions[i];
        loadRate.record(length, nanos * length / bytes);
      }
    }
  }

  /** Starts one batch per server and per {@value #MAX_BATCH_KEYS} of its keys. */
  private List<Batch> startBatches(List<BlockKey> keys, List<ByteBuffer> dsts, List<Integer> open) {
    List<Batch> batches = new ArrayList<>();
    for (Map.Entry<ServerLink, List<Integer>> e : directory.byServer(keys, open).entrySet()) {
      List<Integer> indexes = e.getValue();
      for (int from = 0; from < indexes.size(); from += MAX_BATCH_KEYS) {
        List<Integer> part = indexes.subList(from, Math.min(indexes.size(), from + MAX_BATCH_KEYS));
        Batch b = new Batch(e.getKey(), part, keys, dsts);
        b.call.start();
        batches.add(b);
      }
    }
    return batches;
  }

  /** One batch request: the indexes of its keys, in the order asked for. */
  private final class Batch {
    final List<Integer> indexes;
    final BatchSink[] sink = new BatchSink[1];
    final RemoteCall call;

    Batch(ServerLink link, List<Integer> indexes, List<BlockKey> keys, List<ByteBuffer> dsts) {
      this.indexes = indexes;
      List<ByteBuffer> targets = new ArrayList<>(indexes.size());
      for (int i : indexes) {
        targets.add(dsts.get(i));
      }
      // no retry inside the call: a second attempt would write again into buffers the first one
      // filled; getAllInto asks again for what is still missing instead
      this.call = requests.call(link, "POST", protocol.batchPath(),
          Protocol.keysJson(keys, indexes, 0), null,
          () -> sink[0] = new BatchSink(targets, config.maxBlockBytes, config.checksums), false);
    }

    /**
     * Waits for the answer and records each key it answered in {@code result}, and each block that
     * arrived damaged in {@code damage}: the second time a key's block does, it is a miss.
     *
     * @return false if the request failed (the keys it did not answer whole are left open)
     */
    boolean finish(List<BlockKey> keys, GetStatus[] result, int[] damage) {
      int status = call.await();
      BatchSink answer = sink[0];
      if (answer != null && Protocol.refused(status, answer.errorText())) {
        throw protocol.unexpected("POST batch-get", keys.get(indexes.get(0)), status,
            answer.errorText());
      }
      if (answer != null) {
        for (int j = 0; j < indexes.size(); j++) {
          int i = indexes.get(j);
          GetStatus got = answer.result(j);
          if (got != null) {
            result[i] = got;
          } else if (answer.damaged(j) && ++damage[i] == 2) {
            requests.damaged().increment();
            log.warn("block {} arrived damaged from {} twice: counted as a miss", keys.get(i),
                directory.linkFor(keys.get(i)).name);
            result[i] = GetStatus.MISS;
          }
        }
      }
      return status == 200;
    }
  }
}
