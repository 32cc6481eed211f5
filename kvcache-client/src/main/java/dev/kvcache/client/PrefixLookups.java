package dev.kvcache.client;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.PrefixPin;
import dev.kvcache.spi.PinnedPrefix;
import dev.kvcache.spi.TierCounters;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.stream.IntStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lookups of a prefix over the servers ({@link RemoteTier#lookupPrefix}), and pinned lookups
 * ({@link RemoteTier#pinPrefix}): each server is asked about its own keys, all at once, and for a
 * pin holds the blocks it found under a lease of its own until the pin reads them or lets go.
 */
final class PrefixLookups {

  private static final Logger log = LoggerFactory.getLogger(PrefixLookups.class);
  /** The longest pin a server grants. */
  private static final Duration MAX_PIN = Duration.ofSeconds(60);

  private final RemoteTierConfig config;
  private final Protocol protocol;
  private final ServerDirectory directory;
  private final Requests requests;
  private final TierCounters counters;
  private final BooleanSupplier closed;

  PrefixLookups(RemoteTierConfig config, Protocol protocol, ServerDirectory directory,
      Requests requests, TierCounters counters, BooleanSupplier closed) {
    this.config = config;
    this.protocol = protocol;
    this.directory = directory;
    this.requests = requests;
    this.counters = counters;
    this.closed = closed;
  }

  /** See {@link RemoteTier#lookupPrefix}. */
  int lookupPrefix(List<BlockKey> keys) {
    if (keys.isEmpty()) {
      return 0;
    }
    int present = keys.size();
    for (Map.Entry<ServerLink, List<Integer>> e : directory.byServer(keys, all(keys)).entrySet()) {
      List<Integer> indexes = e.getValue();
      if (indexes.get(0) >= present) {
        continue; // this server's first key is already past the end
      }
      ResponseSink.Text answer = new ResponseSink.Text();
      int status = requests.send(e.getKey(), "POST", protocol.lookupPath(),
          Protocol.keysJson(keys, indexes, 0), null, () -> answer, true);
      int found = 0;
      if (status == 200) {
        found = Math.min(read(e.getKey(), answer.toString()).present(), indexes.size());
      } else if (status == 401 || status == 403 || status == 404) {
        throw protocol.unexpected("POST lookup", keys.get(indexes.get(0)), status,
            answer.toString());
      }
      if (found < indexes.size()) {
        present = Math.min(present, indexes.get(found));
      }
    }
    return present;
  }

  /** See {@link RemoteTier#pinPrefix}. */
  PrefixPin pinPrefix(List<BlockKey> keys, Duration timeout) {
    long pinMillis = timeout.compareTo(MAX_PIN) >= 0
        ? MAX_PIN.toMillis()
        : Math.max(1, timeout.plusNanos(999_999).toMillis());
    List<Map.Entry<ServerLink, List<Integer>>> asked =
        new ArrayList<>(directory.byServer(keys, all(keys)).entrySet());
    List<ResponseSink.Text> answers = new ArrayList<>();
    List<RemoteCall> calls = new ArrayList<>();
    for (Map.Entry<ServerLink, List<Integer>> e : asked) {
      ResponseSink.Text answer = new ResponseSink.Text();
      answers.add(answer);
      calls.add(requests.call(e.getKey(), "POST", protocol.lookupPath(),
          Protocol.keysJson(keys, e.getValue(), pinMillis), null, () -> answer, true).start());
    }
    int present = keys.size();
    List<RemotePin.Lease> leases = new ArrayList<>();
    Map<Integer, RemotePin.Block> pinned = new HashMap<>();
    RemoteTierException refused = null;
    for (int s = 0; s < asked.size(); s++) {
      List<Integer> indexes = asked.get(s).getValue();
      int status = calls.get(s).await();
      String answer = answers.get(s).toString();
      int found = 0;
      if (status == 200) {
        found = pinned(asked.get(s).getKey(), answer, keys, indexes, leases, pinned);
      } else if (status == 401 || status == 403 || status == 404) {
        refused = protocol.unexpected("POST lookup", keys.get(indexes.get(0)), status, answer);
      }
      if (found < indexes.size()) {
        present = Math.min(present, indexes.get(found));
      }
    }
    if (refused != null) {
      leases.forEach(this::release);
      throw refused;
    }
    List<RemotePin.Block> blocks = new ArrayList<>(present);
    for (int i = 0; i < present; i++) {
      blocks.add(pinned.get(i));
      counters.hit();
    }
    if (present < keys.size()) {
      counters.miss();
    }
    return PinnedPrefix.over(new RemotePin(this, blocks, leases, counters), timeout);
  }

  /**
   * Reads one server's answer to a pinned lookup: its lease joins {@code leases}, the blocks it
   * pinned join {@code pinned} by key index.
   *
   * @return how many of the server's keys, from its first, are pinned
   */
  private int pinned(ServerLink link, String json, List<BlockKey> keys, List<Integer> indexes,
      List<RemotePin.Lease> leases, Map<Integer, RemotePin.Block> pinned) {
    Protocol.LookupAnswer answer = read(link, json);
    int found = Math.min(answer.present(), indexes.size());
    if (found == 0) {
      return 0;
    }
    if (answer.lease() == null || answer.lengths().isEmpty()) {
      log.warn("server {} answered a pinned lookup without a lease and the blocks' lengths;"
          + " its blocks count as misses: {}", link.name, json);
      return 0;
    }
    RemotePin.Lease held = new RemotePin.Lease(link, answer.lease());
    leases.add(held);
    for (int j = 0; j < found; j++) {
      int length = j < answer.lengths().size() ? answer.lengths().get(j) : 0;
      if (length < 1 || length > config.maxBlockBytes) {
        return j; // not a block this tier could read
      }
      int i = indexes.get(j);
      pinned.put(i, new RemotePin.Block(keys.get(i), length, held, j));
    }
    return found;
  }

  /** A lookup's answer; one that cannot be read finds nothing, with a warning. */
  private static Protocol.LookupAnswer read(ServerLink link, String json) {
    try {
      return Protocol.lookupAnswer(json);
    } catch (IOException e) {
      log.warn("server {} answered a lookup with what is not a lookup's answer ({}); its keys"
          + " count as misses: {}", link.name, e.getMessage(), json);
      return Protocol.LookupAnswer.NONE;
    }
  }

  /**
   * Fetches a pinned block into {@code dst}, which has room for it.
   *
   * @return {@link GetStatus#HIT}, or {@link GetStatus#MISS} with {@code dst} unchanged if the
   *     server no longer holds it, cannot be reached, or answers another length
   */
  GetStatus fetch(RemotePin.Block block, ByteBuffer dst) {
    if (closed.getAsBoolean()) {
      return GetStatus.MISS;
    }
    int start = dst.position();
    BlockSink[] sink = new BlockSink[1];
    int status = requests.send(block.lease().link(), "GET",
        protocol.pinnedBlockPath(block.lease().id(), block.index()), null, null,
        () -> sink[0] = new BlockSink(dst, config.maxBlockBytes, config.checksums), true);
    if (status == 200 && sink[0].complete()) {
      if (dst.position() - start == block.length()) {
        return GetStatus.HIT;
      }
      log.warn("pinned block {} came back with {} bytes instead of {}, counted as a miss",
          block.key(), dst.position() - start, block.length());
      dst.position(start);
    } else if (status == 401 || status == 403) {
      throw protocol.unexpected("GET pinned", block.key(), status, sink[0].errorText());
    }
    return GetStatus.MISS;
  }

  /** Asks the server to let go of a lease, without waiting for its answer. */
  void release(RemotePin.Lease lease) {
    if (!closed.getAsBoolean()) {
      lease.link().start("DELETE", protocol.leasePath(lease.id()), null, null, null, null,
          new ResponseSink.Text());
    }
  }

  private static List<Integer> all(List<BlockKey> keys) {
    return IntStream.range(0, keys.size()).boxed().toList();
  }
}
