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
import dev.kvcache.spi.AbstractTier;
import dev.kvcache.spi.BlockListener;
import dev.kvcache.spi.BufferLease;
import dev.kvcache.spi.Crc32c;
import dev.kvcache.spi.LoadRate;
import dev.kvcache.spi.Tier;
import dev.kvcache.wire.Wire;
import io.netty.buffer.Unpooled;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Blocks kept by one or more {@code kvcache-server}s, as a {@link Tier}: on its own, or under RAM
 * and disk in a tiered cache ({@code KvCacheBuilder.newBuilder().lowerTier(remote)}).
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
 * <p>This class is the front; its parts are the server directory ({@link ServerDirectory}: DNS
 * and rendezvous), one request with its retry and time-out ({@link RemoteCall}), the protocol
 * ({@link Protocol}: paths, statuses, the answers' JSON), batch reads ({@link BatchReads}),
 * lookups and pins ({@link PrefixLookups}) and the writer ({@link RemoteWriter}).
 */
public final class RemoteTier extends AbstractTier {

  private static final Logger log = LoggerFactory.getLogger(RemoteTier.class);

  private final RemoteTierConfig config;
  private final EventLoopGroup group;
  private final Protocol protocol;
  private final ServerDirectory directory;
  private final Requests requests;
  private final BatchReads batches;
  private final PrefixLookups lookups;
  private final LoadRate loadRate = new LoadRate();
  private final LongAdder damagedBlocks = new LongAdder();
  private volatile boolean closed;

  /**
   * Connects lazily: no server is contacted before the first request.
   *
   * @throws IllegalArgumentException if the namespace is not a server namespace name
   * @throws IllegalStateException if the DNS name has no address
   */
  public RemoteTier(RemoteTierConfig config) {
    this.config = Objects.requireNonNull(config, "config");
    this.protocol = new Protocol(config.namespace);
    SslContext ssl = ClientTls.context(config);
    this.group = new MultiThreadIoEventLoopGroup(config.ioThreads,
        new DefaultThreadFactory("kvcache-client", true), NioIoHandler.newFactory());
    try {
      this.directory = new ServerDirectory(config, group, ssl);
    } catch (RuntimeException e) {
      group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
      throw e;
    }
    this.requests = new Requests(config.requestTimeout, damagedBlocks);
    this.batches = new BatchReads(config, protocol, directory, requests, counters(), loadRate);
    this.lookups = new PrefixLookups(config, protocol, directory, requests, counters(),
        () -> closed);
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

  /** False: the servers' own listeners hear what they store and drop; this client hears none. */
  @Override
  public boolean listen(BlockListener listener) {
    return false;
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
  protected PutStatus store(BlockKey key, ByteBuffer src) {
    ResponseSink.Text answer = new ResponseSink.Text();
    int status = config.wireCodec == null
        ? requests.call(directory.linkFor(key), "PUT", protocol.blockPath(key),
            Unpooled.wrappedBuffer(src.duplicate()), null, () -> answer, false)
            .checksum(config.checksums ? Wire.checksum(Crc32c.of(src)) : null)
            .start().await()
        : putEncoded(key, src, answer);
    return protocol.putStatus("PUT", key, status, answer, counters());
  }

  /**
   * Encodes the block chunk by chunk into the request body as it is sent ({@link BodyStream}), so
   * that the container is never held whole and the server decodes while the rest is encoded.
   */
  private int putEncoded(BlockKey key, ByteBuffer src, ResponseSink.Text answer) {
    ServerLink link = directory.linkFor(key);
    BodyStream body = link.startPut(protocol.blockPath(key), -1, Wire.CODING, answer);
    if (body == null) {
      return RemoteCall.UNREACHABLE;
    }
    try (BlockEncoder encoder = config.wireCodec.encoder(src.remaining(), body)) {
      encoder.write(src.duplicate());
      encoder.finish();
      body.end();
    } catch (IOException e) {
      body.cancel(); // the server answered early, or took nothing for the timeout: see its answer
    }
    return new RemoteCall(requests, link, "PUT", protocol.blockPath(key), body.exchange).await();
  }

  /**
   * A writer that streams the block to its server while its parts are written ({@link
   * RemoteWriter}). A writer closed without a commit resets its request, so the server stores
   * nothing. A server that is down makes the commit {@link PutStatus#NOT_ADMITTED}, as a put to it
   * is.
   */
  @Override
  protected BlockWriter openWriter(BlockKey key, int length) {
    return new RemoteWriter(key, length, config, protocol, directory.linkFor(key), requests,
        counters());
  }

  @Override
  protected BlockLease lease(BlockKey key) {
    BlockSink[] sink = new BlockSink[1];
    long start = System.nanoTime();
    int status = requests.send(directory.linkFor(key), "GET", protocol.blockPath(key), null,
        acceptedCoding(),
        () -> sink[0] = new BlockSink(null, config.maxBlockBytes, config.checksums), true);
    if (status == 200 && sink[0].complete() && decoded(key, sink[0])) {
      ByteBuffer block = sink[0].block();
      loadRate.record(block.remaining(), System.nanoTime() - start);
      counters().hit();
      return new BufferLease(key, block, sink[0].checksum(), counters());
    }
    missOrThrow("GET", key, status, sink[0]);
    return BlockLease.miss(key);
  }

  @Override
  protected GetStatus copyInto(BlockKey key, ByteBuffer dst) {
    BlockSink[] sink = new BlockSink[1];
    long start = System.nanoTime();
    int position = dst.position();
    int status = requests.send(directory.linkFor(key), "GET", protocol.blockPath(key), null,
        acceptedCoding(),
        () -> sink[0] = new BlockSink(dst, config.maxBlockBytes, config.checksums), true);
    if (status == 200 && sink[0].tooSmall()) {
      return GetStatus.BUFFER_TOO_SMALL;
    }
    if (status == 200 && sink[0].complete() && decoded(key, sink[0])) {
      loadRate.record(dst.position() - position, System.nanoTime() - start);
      counters().hit();
      return GetStatus.HIT;
    }
    missOrThrow("GET", key, status, sink[0]);
    return GetStatus.MISS;
  }

  private String acceptedCoding() {
    return config.wireCodec == null ? null : Wire.CODING;
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
   * Reads the blocks in batches, one request per server for the keys it holds (up to 256 keys
   * each), all under way at once; each block lands in the buffer at its key's index as its bytes
   * arrive. Keys a server left for a later batch (its answers are bounded
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
    return batches.getAllInto(keys, dsts);
  }

  private void missOrThrow(String method, BlockKey key, int status, BlockSink sink) {
    counters().miss();
    if (sink != null && Protocol.refused(status, sink.errorText())) {
      throw protocol.unexpected(method, key, status, sink.errorText());
    }
  }

  @Override
  protected boolean holds(BlockKey key) {
    ResponseSink.Text answer = new ResponseSink.Text();
    int status = requests.send(directory.linkFor(key), "HEAD", protocol.blockPath(key), null, null,
        () -> answer, true);
    if (status == 200) {
      return true;
    }
    if (status == 401 || status == 403) {
      throw protocol.unexpected("HEAD", key, status, answer.toString());
    }
    return false;
  }

  /**
   * Keeps the servers' copy: a put above re-stores a key whose block, named by its content, is
   * the one the servers hold, and other engines read it there.
   *
   * @return false: nothing is removed
   */
  @Override
  public boolean supersede(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    return false;
  }

  @Override
  protected boolean remove(BlockKey key) {
    ResponseSink.Text answer = new ResponseSink.Text();
    ServerLink link = directory.linkFor(key);
    int status = requests.send(link, "DELETE", protocol.blockPath(key), null, null, () -> answer,
        false);
    if (status == 204) {
      counters().delete();
      return true;
    }
    if (status == 404 && Protocol.isNotCached(answer.toString())) {
      return false;
    }
    if (status == RemoteCall.UNREACHABLE || status >= 500) {
      log.warn("DELETE of {} did not reach {}", key, link.name);
      return false;
    }
    throw protocol.unexpected("DELETE", key, status, answer.toString());
  }

  /**
   * Asks each server about its own keys, all at once: the prefix ends at the first key its server
   * lacks (or its server is down).
   */
  @Override
  protected int countPrefix(List<BlockKey> keys) {
    return lookups.lookupPrefix(keys);
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
  protected PrefixPin pin(List<BlockKey> keys, Duration timeout) {
    return lookups.pinPrefix(keys, timeout);
  }

  @Override
  protected void ensureOpen() {
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

  @Override
  public CacheStats stats() {
    return counters().snapshot(0, 0, 0, 0, 0);
  }

  /** Closes the connections and stops the IO threads. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    directory.close();
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
  }

  @Override
  public String toString() {
    return "RemoteTier[" + config + "]";
  }
}
