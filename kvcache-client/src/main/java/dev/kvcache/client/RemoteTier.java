package dev.kvcache.client;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.BlockWriter;
import dev.kvcache.CacheStats;
import dev.kvcache.GetStatus;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.codec.BlockEncoder;
import dev.kvcache.codec.CorruptBlockException;
import dev.kvcache.spi.AbstractBlockWriter;
import dev.kvcache.spi.BufferLease;
import dev.kvcache.spi.Crc32c;
import dev.kvcache.spi.LoadRate;
import dev.kvcache.spi.PutChecks;
import dev.kvcache.spi.Rendezvous;
import dev.kvcache.spi.Tier;
import dev.kvcache.spi.TierCounters;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Blocks kept by one or more {@code kvcache-server}s, as a {@link Tier}: on its own, or under RAM
 * and disk in a tiered cache ({@code KvCache.builder().lowerTier(remote)}).
 *
 * <p>Each key lives on one server, chosen by rendezvous hashing over the configured servers (or
 * the addresses of a DNS name), so every client with the same list finds it in the same place. A
 * server that cannot be reached, or does not answer within the request timeout, is left alone for
 * a back-off: meanwhile its keys are misses, puts to it are dropped ({@link PutStatus#NOT_ADMITTED})
 * and deletes do not reach it. A block is read into the caller's buffer as its frames arrive, and
 * only a complete block, of exactly the length the server announced, counts as a hit: a server
 * dying mid-block is a miss, never a short or mixed block. Reads are retried once on a fresh
 * connection; writes are not retried. A refused token or an unknown namespace throws {@link
 * RemoteTierException}: those are configuration errors no retry fixes.
 *
 * <p>{@link #capacityBytes()} and the gauges in {@link #stats()} are 0: the servers report their
 * own on {@code /prometheus}.
 *
 * <p><b>Size.</b> This class is past the size the project splits classes at, and is not split
 * yet: its concerns are the server directory (DNS and rendezvous), one request with its retry and
 * time-out ({@code Call}), the protocol (paths, statuses, the answers' JSON), batch reads ({@code
 * Batch}), pins and the writer; each is to become a class of its own, with this one the front.
 */
public final class RemoteTier implements Tier {

  private static final Logger log = LoggerFactory.getLogger(RemoteTier.class);
  private static final Pattern NAMESPACE = Pattern.compile("[A-Za-z0-9._-]{1,64}");
  private static final Pattern PRESENT = Pattern.compile("\"present\"\\s*:\\s*(\\d+)");
  private static final Pattern LEASE = Pattern.compile("\"lease\"\\s*:\\s*\"([0-9A-Fa-f]+)\"");
  private static final Pattern LENGTHS = Pattern.compile("\"lengths\"\\s*:\\s*\\[([0-9,\\s]*)]");
  /** The longest pin a server grants. */
  private static final Duration MAX_PIN = Duration.ofSeconds(60);
  private static final int UNREACHABLE = -1;
  private static final long BODY_PATIENCE_MILLIS = 1000;
  /** The most keys in one batch request (the server's limit). */
  private static final int MAX_BATCH_KEYS = 256;

  private final RemoteTierConfig config;
  private final EventLoopGroup group;
  /** The servers' TLS context, or null for cleartext. */
  private final SslContext ssl;
  private final TierCounters counters = new TierCounters();
  private final LoadRate loadRate = new LoadRate();
  private final LongAdder damagedBlocks = new LongAdder();
  private final String prefix;
  private volatile Servers servers;
  private volatile boolean closed;

  /** The current servers and their rendezvous ids, in one snapshot. */
  private static final class Servers {
    final List<ServerLink> links;
    final List<Long> ids;
    final long resolvedAtNanos;

    Servers(List<ServerLink> links, long resolvedAtNanos) {
      this.links = links;
      this.ids = links.stream().map(l -> l.id).toList();
      this.resolvedAtNanos = resolvedAtNanos;
    }
  }

  /**
   * Connects lazily: no server is contacted before the first request.
   *
   * @throws IllegalArgumentException if the namespace is not a server namespace name
   * @throws IllegalStateException if the DNS name has no address
   */
  public RemoteTier(RemoteTierConfig config) {
    this.config = Objects.requireNonNull(config, "config");
    if (!NAMESPACE.matcher(config.namespace).matches()) {
      throw new IllegalArgumentException("namespace '" + config.namespace
          + "' is not a server namespace name (1 to 64 of A-Z a-z 0-9 . _ -)");
    }
    this.prefix = "/v1/namespaces/" + config.namespace;
    this.ssl = ClientTls.context(config);
    this.group = new MultiThreadIoEventLoopGroup(config.ioThreads,
        new DefaultThreadFactory("kvcache-client", true), NioIoHandler.newFactory());
    try {
      this.servers = new Servers(links(addresses(), Map.of()), System.nanoTime());
    } catch (RuntimeException e) {
      group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
      throw e;
    }
  }

  private List<InetSocketAddress> addresses() {
    if (config.dnsName == null) {
      return config.servers;
    }
    try {
      List<InetSocketAddress> found = new ArrayList<>();
      for (InetAddress a : InetAddress.getAllByName(config.dnsName)) {
        found.add(new InetSocketAddress(a, config.dnsPort));
      }
      return found;
    } catch (UnknownHostException e) {
      throw new IllegalStateException("DNS name '" + config.dnsName + "' has no address", e);
    }
  }

  private List<ServerLink> links(List<InetSocketAddress> addresses, Map<String, ServerLink> old) {
    List<ServerLink> links = new ArrayList<>();
    for (InetSocketAddress a : addresses) {
      String name = a.getHostString() + ":" + a.getPort();
      ServerLink existing = old.get(name);
      links.add(existing != null ? existing
          : new ServerLink(a, config, group, ssl, config.dnsName != null ? config.dnsName : a.getHostString()));
    }
    return List.copyOf(links);
  }

  /** The servers, looking the DNS name up again once its refresh interval has passed. */
  private Servers servers() {
    Servers s = servers;
    if (config.dnsName == null
        || System.nanoTime() - s.resolvedAtNanos < config.dnsRefresh.toNanos()) {
      return s;
    }
    synchronized (this) {
      s = servers;
      if (System.nanoTime() - s.resolvedAtNanos < config.dnsRefresh.toNanos()) {
        return s;
      }
      Map<String, ServerLink> old = new LinkedHashMap<>();
      s.links.forEach(l -> old.put(l.name, l));
      Servers fresh;
      try {
        fresh = new Servers(links(addresses(), old), System.nanoTime());
      } catch (IllegalStateException e) {
        log.warn("{}; keeping the {} servers found before", e.getMessage(), s.links.size());
        fresh = new Servers(s.links, System.nanoTime());
      }
      for (ServerLink l : s.links) {
        if (!fresh.links.contains(l)) {
          l.close();
        }
      }
      servers = fresh;
      return fresh;
    }
  }

  private ServerLink linkFor(BlockKey key) {
    Servers s = servers();
    return s.links.get(Rendezvous.pick(key, s.ids));
  }

  private String blockPath(BlockKey key) {
    return prefix + "/blocks/" + key.toHex();
  }

  /**
   * How fast blocks come from the servers: timed on {@link #get}, {@link #getInto} and {@link
   * #getAllInto} (a batch's time shared among its blocks by their bytes), the network and the
   * server's own read included.
   */
  @Override
  public LoadRate loadRate() {
    return loadRate;
  }

  @Override
  public String name() {
    return "remote";
  }

  @Override
  public long capacityBytes() {
    return 0;
  }

  @Override
  public int maxBlockBytes() {
    return config.maxBlockBytes;
  }

  @Override
  public PutStatus put(BlockKey key, ByteBuffer src) {
    Objects.requireNonNull(src, "src");
    ensureOpen();
    if (!PutChecks.fits(key, src.remaining(), config.maxBlockBytes, counters)) {
      return PutStatus.REJECTED_TOO_LARGE;
    }
    ResponseSink.Text answer = new ResponseSink.Text();
    int status = config.wireCodec == null
        ? new Call(linkFor(key), "PUT", blockPath(key), Unpooled.wrappedBuffer(src.duplicate()),
            null, () -> answer, false)
            .checksum(config.checksums ? Crc32c.toHeader(Crc32c.of(src)) : null)
            .start().await()
        : putEncoded(key, src, answer);
    return putStatus("PUT", key, status, answer);
  }

  /**
   * Encodes the block chunk by chunk into the request body as it is sent ({@link BodyStream}), so
   * that the container is never held whole and the server decodes while the rest is encoded.
   */
  private int putEncoded(BlockKey key, ByteBuffer src, ResponseSink.Text answer) {
    ServerLink link = linkFor(key);
    BodyStream body = link.startPut(blockPath(key), -1, BlockSink.CODING, answer);
    if (body == null) {
      return UNREACHABLE;
    }
    try (BlockEncoder encoder = config.wireCodec.encoder(src.remaining(), body)) {
      encoder.write(src.duplicate());
      encoder.finish();
      body.end();
    } catch (IOException e) {
      body.cancel(); // the server answered early, or took nothing for the timeout: see its answer
    }
    return new Call(link, "PUT", blockPath(key), body.exchange).await();
  }

  private PutStatus putStatus(String method, BlockKey key, int status, ResponseSink.Text answer) {
    switch (status) {
      case 201:
        counters.put();
        return PutStatus.STORED;
      case 202:
      case UNREACHABLE:
        counters.put();
        return PutStatus.NOT_ADMITTED;
      case 413:
        counters.rejection();
        return PutStatus.REJECTED_TOO_LARGE;
      case 507:
        counters.rejection();
        return answer.toString().contains("\"not-durable\"")
            ? PutStatus.REJECTED_NOT_DURABLE : PutStatus.REJECTED_NO_SPACE;
      default:
        throw unexpected(method, key, status, answer.toString());
    }
  }

  /**
   * A writer that streams the block to its server while its parts are written: the PUT opens with
   * the writer (with the block's length as its {@code content-length}, or encoded chunk by chunk
   * with the wire codec), each part is sent as it comes, copied once into the request's buffers,
   * and the commit ends the body and waits for the answer. A writer closed without a commit
   * resets its request, so the server stores nothing. A server that is down makes the commit
   * {@link PutStatus#NOT_ADMITTED}, as a put to it is.
   */
  @Override
  public BlockWriter writer(BlockKey key, int length) {
    ensureOpen();
    if (!PutChecks.fits(key, length, config.maxBlockBytes, counters)) {
      return BlockWriter.rejected(key, length, PutStatus.REJECTED_TOO_LARGE);
    }
    return new RemoteWriter(key, length);
  }

  /** The writer of {@link #writer}. */
  private final class RemoteWriter extends AbstractBlockWriter {
    private final ServerLink link;
    private final ResponseSink.Text answer = new ResponseSink.Text();
    private final BodyStream body;
    private BlockEncoder encoder;
    /** The server answered before the body was all sent, or stopped taking it. */
    private boolean stopped;

    RemoteWriter(BlockKey key, int length) {
      super(key, length, false); // the server computes the checksum of what it stores
      link = linkFor(key);
      body = config.wireCodec == null
          ? link.startPut(blockPath(key), length, null, answer)
          : link.startPut(blockPath(key), -1, BlockSink.CODING, answer);
      if (body != null && config.wireCodec != null) {
        try {
          encoder = config.wireCodec.encoder(length, body);
        } catch (IOException e) {
          stop();
        }
      }
    }

    @Override
    protected void copyIn(ByteBuffer src, int offset) {
      if (body == null || stopped) {
        return;
      }
      try {
        if (encoder != null) {
          encoder.write(src.duplicate());
        } else {
          body.write(src.duplicate());
        }
      } catch (IOException e) {
        stop();
      }
    }

    @Override
    protected PutStatus publish() {
      if (body == null) {
        return putStatus("PUT", key(), UNREACHABLE, answer);
      }
      if (!stopped) {
        try {
          if (encoder != null) {
            encoder.finish();
          }
          body.end();
        } catch (IOException e) {
          stop();
        }
      }
      return putStatus("PUT", key(), new Call(link, "PUT", blockPath(key()), body.exchange).await(),
          answer);
    }

    @Override
    protected void discard() {
      if (body != null) {
        stop();
        body.exchange.abandon();
      }
    }

    private void stop() {
      stopped = true;
      if (encoder != null) {
        encoder.close();
      }
      body.cancel();
    }
  }

  @Override
  public BlockLease get(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    BlockSink[] sink = new BlockSink[1];
    long start = System.nanoTime();
    int status = call(linkFor(key), "GET", blockPath(key), null, acceptedCoding(),
        () -> sink[0] = new BlockSink(null, config.maxBlockBytes, config.checksums), true);
    if (status == 200 && sink[0].complete() && decoded(key, sink[0])) {
      ByteBuffer block = sink[0].block();
      loadRate.record(block.remaining(), System.nanoTime() - start);
      counters.hit();
      return new BufferLease(key, block, sink[0].checksum(), counters);
    }
    missOrThrow("GET", key, status, sink[0]);
    return BlockLease.miss(key);
  }

  @Override
  public GetStatus getInto(BlockKey key, ByteBuffer dst) {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(dst, "dst");
    ensureOpen();
    if (dst.isReadOnly()) {
      throw new ReadOnlyBufferException();
    }
    BlockSink[] sink = new BlockSink[1];
    long start = System.nanoTime();
    int position = dst.position();
    int status = call(linkFor(key), "GET", blockPath(key), null, acceptedCoding(),
        () -> sink[0] = new BlockSink(dst, config.maxBlockBytes, config.checksums), true);
    if (status == 200 && sink[0].tooSmall()) {
      return GetStatus.BUFFER_TOO_SMALL;
    }
    if (status == 200 && sink[0].complete() && decoded(key, sink[0])) {
      loadRate.record(dst.position() - position, System.nanoTime() - start);
      counters.hit();
      return GetStatus.HIT;
    }
    missOrThrow("GET", key, status, sink[0]);
    return GetStatus.MISS;
  }

  private String acceptedCoding() {
    return config.wireCodec == null ? null : BlockSink.CODING;
  }

  /**
   * Decodes an encoded answer into place, on the caller's thread; false, and a warning, if the
   * container is damaged (a miss: the destination holds no block).
   */
  private boolean decoded(BlockKey key, BlockSink sink) {
    try {
      sink.decode();
      return true;
    } catch (CorruptBlockException e) {
      damagedBlocks.increment();
      log.warn("block {} came back damaged from the server, counted as a miss: {}", key,
          e.getMessage());
      return false;
    }
  }

  /**
   * Reads the blocks in batches, one request per server for the keys it holds (up to {@value
   * #MAX_BATCH_KEYS} keys each), all under way at once; each block lands in the buffer at its
   * key's index as its bytes arrive. Keys a server left for a later batch (its answers are bounded
   * in bytes) are asked for again; a batch that failed is tried once more for the keys it had not
   * answered whole, which are then misses.
   */
  @Override
  public GetStatus[] getAllInto(List<BlockKey> keys, List<ByteBuffer> dsts) {
    Objects.requireNonNull(keys, "keys");
    Objects.requireNonNull(dsts, "dsts");
    if (keys.size() != dsts.size()) {
      throw new IllegalArgumentException(
          keys.size() + " keys but " + dsts.size() + " destination buffers");
    }
    for (int i = 0; i < keys.size(); i++) {
      Objects.requireNonNull(keys.get(i), "key");
      if (dsts.get(i).isReadOnly()) {
        throw new ReadOnlyBufferException();
      }
    }
    ensureOpen();
    long start = System.nanoTime();
    int[] positions = new int[keys.size()];
    for (int i = 0; i < positions.length; i++) {
      positions[i] = dsts.get(i).position();
    }
    GetStatus[] result = new GetStatus[keys.size()];
    int[] damage = new int[keys.size()];
    List<Integer> open = indexes(keys);
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
    long nanos = System.nanoTime() - start;
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
      if (result[i] == GetStatus.HIT) { // the batch's time, shared by the bytes each block took
        long length = dsts.get(i).position() - positions[i];
        loadRate.record(length, nanos * length / bytes);
      }
    }
    return result;
  }

  /** One batch request: the indexes of its keys, in the order asked for. */
  private final class Batch {
    final List<Integer> indexes;
    final BatchSink[] sink = new BatchSink[1];
    final Call call;

    Batch(ServerLink link, List<Integer> indexes, List<BlockKey> keys, List<ByteBuffer> dsts) {
      this.indexes = indexes;
      List<ByteBuffer> targets = new ArrayList<>(indexes.size());
      for (int i : indexes) {
        targets.add(dsts.get(i));
      }
      // no retry inside the call: a second attempt would write again into buffers the first one
      // filled; getAllInto asks again for what is still missing instead
      this.call = new Call(link, "POST", prefix + "/batch-get", keysJson(keys, indexes), null,
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
      if (status == 401 || status == 403 || (status == 404 && !isNotCached(answer.errorText()))) {
        throw unexpected("POST batch-get", keys.get(indexes.get(0)), status, answer.errorText());
      }
      if (answer != null) {
        for (int j = 0; j < indexes.size(); j++) {
          int i = indexes.get(j);
          GetStatus got = answer.result(j);
          if (got != null) {
            result[i] = got;
          } else if (answer.damaged(j) && ++damage[i] == 2) {
            damaged(keys.get(i));
            result[i] = GetStatus.MISS;
          }
        }
      }
      return status == 200;
    }
  }

  /** Starts one batch per server and per {@value #MAX_BATCH_KEYS} of its keys. */
  private List<Batch> startBatches(List<BlockKey> keys, List<ByteBuffer> dsts, List<Integer> open) {
    List<Batch> batches = new ArrayList<>();
    for (Map.Entry<ServerLink, List<Integer>> e : byServer(keys, open).entrySet()) {
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

  private void missOrThrow(String method, BlockKey key, int status, BlockSink sink) {
    counters.miss();
    if (status == 401 || status == 403 || (status == 404 && !isNotCached(sink.errorText()))) {
      throw unexpected(method, key, status, sink.errorText());
    }
  }

  /** Whether a 404's body says the block is not cached (not that the namespace is unknown). */
  private static boolean isNotCached(String errorBody) {
    return errorBody.contains("\"not-cached\"");
  }

  @Override
  public boolean contains(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    ResponseSink.Text answer = new ResponseSink.Text();
    int status = call(linkFor(key), "HEAD", blockPath(key), null, () -> answer, true);
    if (status == 200) {
      return true;
    }
    if (status == 401 || status == 403) {
      throw unexpected("HEAD", key, status, answer.toString());
    }
    return false;
  }

  @Override
  public boolean delete(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    ResponseSink.Text answer = new ResponseSink.Text();
    int status = call(linkFor(key), "DELETE", blockPath(key), null, () -> answer, false);
    if (status == 204) {
      counters.delete();
      return true;
    }
    if (status == 404 && isNotCached(answer.toString())) {
      return false;
    }
    if (status == UNREACHABLE || status >= 500) {
      log.warn("DELETE of {} did not reach {}", key, linkFor(key).name);
      return false;
    }
    throw unexpected("DELETE", key, status, answer.toString());
  }

  /**
   * Asks each server about its own keys, all at once: the prefix ends at the first key its server
   * lacks (or its server is down).
   */
  @Override
  public int lookupPrefix(List<BlockKey> keys) {
    Objects.requireNonNull(keys, "keys");
    ensureOpen();
    if (keys.isEmpty()) {
      return 0;
    }
    List<Integer> all = indexes(keys);
    int present = keys.size();
    for (Map.Entry<ServerLink, List<Integer>> e : byServer(keys, all).entrySet()) {
      List<Integer> indexes = e.getValue();
      if (indexes.get(0) >= present) {
        continue; // this server's first key is already past the end
      }
      ResponseSink.Text answer = new ResponseSink.Text();
      int status = call(e.getKey(), "POST", prefix + "/lookup", keysJson(keys, indexes),
          () -> answer, true);
      int found = 0;
      if (status == 200) {
        Matcher m = PRESENT.matcher(answer.toString());
        found = m.find() ? Math.min(Integer.parseInt(m.group(1)), indexes.size()) : 0;
      } else if (status == 401 || status == 403 || status == 404) {
        throw unexpected("POST lookup", keys.get(indexes.get(0)), status, answer.toString());
      }
      if (found < indexes.size()) {
        present = Math.min(present, indexes.get(found));
      }
    }
    return present;
  }

  /**
   * Looks the keys up as {@link #lookupPrefix} does, each server pinning the blocks it found under
   * a lease of its own (all servers asked at once); a block's bytes are fetched only when it is
   * read through the pin. A server holds a pin for at most 60 s: past that, reads of its blocks
   * are misses even if {@code timeout} is longer. Closing the pin, or its timeout, releases the
   * servers' leases without waiting for their answers; a lease whose release is lost ends with its
   * time on the server.
   */
  @Override
  public PrefixPin pinPrefix(List<BlockKey> keys, Duration timeout) {
    Objects.requireNonNull(keys, "keys");
    PrefixPin.requirePositive(timeout);
    ensureOpen();
    long pinMillis = timeout.compareTo(MAX_PIN) >= 0
        ? MAX_PIN.toMillis()
        : Math.max(1, timeout.plusNanos(999_999).toMillis());
    List<Integer> all = indexes(keys);
    Map<ServerLink, List<Integer>> byServer = byServer(keys, all);
    List<Map.Entry<ServerLink, List<Integer>>> asked = new ArrayList<>(byServer.entrySet());
    List<ResponseSink.Text> answers = new ArrayList<>();
    List<Call> calls = new ArrayList<>();
    for (Map.Entry<ServerLink, List<Integer>> e : asked) {
      ResponseSink.Text answer = new ResponseSink.Text();
      answers.add(answer);
      calls.add(new Call(e.getKey(), "POST", prefix + "/lookup",
          keysJson(keys, e.getValue(), pinMillis), null, () -> answer, true).start());
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
        refused = unexpected("POST lookup", keys.get(indexes.get(0)), status, answer);
      }
      if (found < indexes.size()) {
        present = Math.min(present, indexes.get(found));
      }
    }
    if (refused != null) {
      leases.forEach(this::releasePinned);
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
    return PrefixPin.over(new RemotePin(this, blocks, leases, counters), timeout);
  }

  /**
   * Reads one server's answer to a pinned lookup: its lease joins {@code leases}, the blocks it
   * pinned join {@code pinned} by key index.
   *
   * @return how many of the server's keys, from its first, are pinned
   */
  private int pinned(ServerLink link, String answer, List<BlockKey> keys, List<Integer> indexes,
      List<RemotePin.Lease> leases, Map<Integer, RemotePin.Block> pinned) {
    Matcher present = PRESENT.matcher(answer);
    int found = present.find() ? Math.min(Integer.parseInt(present.group(1)), indexes.size()) : 0;
    if (found == 0) {
      return 0;
    }
    Matcher lease = LEASE.matcher(answer);
    Matcher lengths = LENGTHS.matcher(answer);
    if (!lease.find() || !lengths.find()) {
      log.warn("server {} answered a pinned lookup without a lease and the blocks' lengths;"
          + " its blocks count as misses: {}", link.name, answer);
      return 0;
    }
    RemotePin.Lease held = new RemotePin.Lease(link, lease.group(1));
    leases.add(held);
    String[] each = lengths.group(1).split(",");
    for (int j = 0; j < found; j++) {
      int length = j < each.length && !each[j].isBlank() ? Integer.parseInt(each[j].strip()) : 0;
      if (length < 1 || length > config.maxBlockBytes) {
        return j; // not a block this tier could read
      }
      int i = indexes.get(j);
      pinned.put(i, new RemotePin.Block(keys.get(i), length, held, j));
    }
    return found;
  }

  /**
   * Fetches a pinned block into {@code dst}, which has room for it.
   *
   * @return {@link GetStatus#HIT}, or {@link GetStatus#MISS} with {@code dst} unchanged if the
   *     server no longer holds it, cannot be reached, or answers another length
   */
  GetStatus fetchPinned(RemotePin.Block block, ByteBuffer dst) {
    if (closed) {
      return GetStatus.MISS;
    }
    int start = dst.position();
    BlockSink[] sink = new BlockSink[1];
    int status = call(block.lease().link(), "GET",
        prefix + "/leases/" + block.lease().id() + "/blocks/" + block.index(), null,
        () -> sink[0] = new BlockSink(dst, config.maxBlockBytes, config.checksums), true);
    if (status == 200 && sink[0].complete()) {
      if (dst.position() - start == block.length()) {
        return GetStatus.HIT;
      }
      log.warn("pinned block {} came back with {} bytes instead of {}, counted as a miss",
          block.key(), dst.position() - start, block.length());
      dst.position(start);
    } else if (status == 401 || status == 403) {
      throw unexpected("GET pinned", block.key(), status, sink[0].errorText());
    }
    return GetStatus.MISS;
  }

  /** Asks the server to let go of a lease, without waiting for its answer. */
  void releasePinned(RemotePin.Lease lease) {
    if (!closed) {
      lease.link().start("DELETE", prefix + "/leases/" + lease.id(), null, null, null, null,
          new ResponseSink.Text());
    }
  }

  /** Every index of {@code keys}, in order. */
  private static List<Integer> indexes(List<BlockKey> keys) {
    return IntStream.range(0, keys.size()).boxed().toList();
  }

  /** The given keys' indexes, grouped by the server each key lives on. */
  private Map<ServerLink, List<Integer>> byServer(List<BlockKey> keys, List<Integer> indexes) {
    Servers s = servers();
    Map<ServerLink, List<Integer>> byServer = new LinkedHashMap<>();
    for (int i : indexes) {
      byServer.computeIfAbsent(s.links.get(Rendezvous.pick(keys.get(i), s.ids)),
          l -> new ArrayList<>()).add(i);
    }
    return byServer;
  }

  /** The body {@code {"keys":["<hex>",...]}} of a lookup or batch, for the keys at {@code indexes}. */
  private static ByteBuf keysJson(List<BlockKey> keys, List<Integer> indexes) {
    return keysJson(keys, indexes, 0);
  }

  /** As {@link #keysJson(List, List)}, with {@code "pin_ms"} if {@code pinMillis} is positive. */
  private static ByteBuf keysJson(List<BlockKey> keys, List<Integer> indexes, long pinMillis) {
    StringBuilder json = new StringBuilder(30 + 35 * indexes.size()).append("{\"keys\":[");
    for (int j = 0; j < indexes.size(); j++) {
      json.append(j == 0 ? "\"" : ",\"").append(keys.get(indexes.get(j)).toHex()).append('"');
    }
    json.append(pinMillis > 0 ? "],\"pin_ms\":" + pinMillis + "}" : "]}");
    return Unpooled.wrappedBuffer(json.toString().getBytes(StandardCharsets.US_ASCII));
  }

  /**
   * One request to one server, waited for.
   *
   * @param body the request body (released here), or null
   * @param retryOnce whether a failed exchange is tried once more (reads only)
   * @return the status, or {@link #UNREACHABLE}
   */
  private int call(ServerLink link, String method, String path, ByteBuf body,
      Supplier<ResponseSink> sinks, boolean retryOnce) {
    return call(link, method, path, body, null, sinks, retryOnce);
  }

  /** @param coding the body's content coding, or for a GET the coding its answer may come in */
  private int call(ServerLink link, String method, String path, ByteBuf body, String coding,
      Supplier<ResponseSink> sinks, boolean retryOnce) {
    return new Call(link, method, path, body, coding, sinks, retryOnce).start().await();
  }

  /** A request to one server: started, then waited for, so that several can be under way. */
  private final class Call {
    private final ServerLink link;
    private final String method;
    private final String path;
    private final ByteBuf body;
    private final String coding;
    private final Supplier<ResponseSink> sinks;
    private String checksum;
    private boolean retryLeft;
    private StreamExchange exchange;

    /** @param body the request body, released once the call is waited for; or null */
    Call(ServerLink link, String method, String path, ByteBuf body, String coding,
        Supplier<ResponseSink> sinks, boolean retryOnce) {
      this.link = link;
      this.method = method;
      this.path = path;
      this.body = body;
      this.coding = coding;
      this.sinks = sinks;
      this.retryLeft = retryOnce;
    }

    /** A call whose stream was started by a {@link BodyStream}'s sender: never retried. */
    Call(ServerLink link, String method, String path, StreamExchange started) {
      this(link, method, path, null, null, null, false);
      this.exchange = started;
    }

    Call start() {
      exchange = link.start(method, path,
          "POST".equals(method) ? "application/json" : "application/octet-stream",
          coding, checksum, body == null ? null : body.retainedDuplicate(), sinks.get());
      return this;
    }

    /** Sends {@code header} as the body's {@value Crc32c#HEADER}. */
    Call checksum(String header) {
      this.checksum = header;
      return this;
    }

    /** @return the status, or {@link #UNREACHABLE} */
    int await() {
      try {
        while (true) {
          StreamExchange current = exchange;
          if (current == null) {
            return UNREACHABLE;
          }
          try {
            return current.done.get(config.requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
          } catch (TimeoutException e) {
            if (current.abandon()) {
              return current.done.join();
            }
            link.failed(new TimeoutException("no answer to " + method + " in "
                + config.requestTimeout.toMillis() + " ms"));
            return UNREACHABLE;
          } catch (ExecutionException e) {
            current.abandon();
            Throwable cause = e.getCause();
            if (!retryLeft) {
              if (cause instanceof IOException) {
                link.failed(cause);
              } else if (cause instanceof DamagedBlockException) {
                damagedBlocks.increment();
                log.warn("{} {} on {}: {} twice; counted as a miss", method, path, link.name,
                    cause.getMessage());
              } else {
                log.warn("{} {} on {} failed: {}", method, path, link.name, cause.toString());
              }
              return UNREACHABLE;
            }
            retryLeft = false;
            log.debug("{} {} on {} failed ({}); trying once more", method, path, link.name,
                cause.toString());
          } catch (InterruptedException e) {
            current.abandon();
            Thread.currentThread().interrupt();
            return UNREACHABLE;
          } finally {
            current.awaitBodyReleased(BODY_PATIENCE_MILLIS);
          }
          start();
        }
      } finally {
        if (body != null) {
          body.release();
        }
      }
    }
  }

  private RemoteTierException unexpected(String method, BlockKey key, int status, String body) {
    return new RemoteTierException(status, method + " of block " + key + " in namespace '"
        + config.namespace + "' answered " + status + (body.isEmpty() ? "" : ": " + body));
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("the remote tier is closed");
    }
  }

  /**
   * Blocks that arrived damaged twice (their bytes without the CRC32C the server sent, or an
   * encoded block that did not decode to it) and were counted as misses; each is also logged as
   * a warning.
   */
  public long damagedBlocks() {
    return damagedBlocks.sum();
  }

  /** Counts a block that arrived damaged for the last time, and warns of it. */
  private void damaged(BlockKey key) {
    damagedBlocks.increment();
    log.warn("block {} arrived damaged from {} twice: counted as a miss", key,
        linkFor(key).name);
  }

  @Override
  public CacheStats stats() {
    return counters.snapshot(0, 0, 0, 0, 0);
  }

  /** Closes the connections and stops the IO threads. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    servers.links.forEach(ServerLink::close);
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
  }

  @Override
  public String toString() {
    return "RemoteTier[" + config + "]";
  }
}
