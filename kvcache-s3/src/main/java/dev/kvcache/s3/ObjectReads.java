package dev.kvcache.s3;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.s3.internal.DeleteQueue;
import dev.kvcache.s3.internal.Download;
import dev.kvcache.s3.internal.ObjectIndex.Entry;
import dev.kvcache.s3.internal.ObjectIndex;
import dev.kvcache.s3.internal.ObjectNames.Folder;
import dev.kvcache.s3.internal.ObjectNames;
import dev.kvcache.s3.internal.RangedDownload;
import dev.kvcache.s3.internal.Requests.Op;
import dev.kvcache.s3.internal.Requests;
import dev.kvcache.s3.internal.StoreFailure;
import dev.kvcache.s3.internal.StoreState;
import dev.kvcache.seal.Sealer;
import dev.kvcache.spi.BufferLease;
import dev.kvcache.spi.LoadRate;
import dev.kvcache.spi.TierCounters;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;

/**
 * An object tier's reads: downloads straight into their destination, checked against the CRC32C
 * each object was stored with, a damaged object refused (a miss) and deleted on its ETag; several
 * at once for {@link S3Tier#getAll}. A plain object the index knows to hold {@value #RANGE_BYTES}
 * bytes or more is read by ranged GETs of that many bytes at once ({@link RangedDownload}). The
 * presence index learns the objects read, and forgets those found missing.
 */
final class ObjectReads {

  private static final Logger log = LoggerFactory.getLogger(S3Tier.class);
  /** The most downloads one {@link #getAll} has under way at once. */
  static final int READ_AHEAD = 8;
  /**
   * Bytes of each ranged GET of a large object; objects of twice this or more are read so, the
   * ranges under way at once.
   */
  static final int RANGE_BYTES = 8 << 20;

  private final S3TierConfig config;
  private final S3AsyncClient s3;
  private final ObjectNames names;
  private final ObjectIndex index;
  private final StoreState store;
  private final Requests requests;
  private final DeleteQueue deletes;
  private final TierCounters counters;
  private final LoadRate loadRate;
  private final StoreFailure storeFailed;
  private final Consumer<List<Entry>> evict;
  private final Consumer<BlockKey> gone;
  private final BiConsumer<BlockKey, Map<String, String>> readTag;
  /** The sealed namespaces' salts; null if none is sealed. */
  private final ObjectSeals seals;
  private final LongAdder bytesDownloaded = new LongAdder();
  private final LongAdder damaged = new LongAdder();
  private final LongAdder ranged = new LongAdder();
  /** Names of damaged objects whose deletion is under way: reads and lookups pass them by. */
  private final Set<String> refused = ConcurrentHashMap.newKeySet();

  /**
   * @param storeFailed records a failed request; whether it was the store's failure
   * @param evict counts the entries the index let go of as evictions and deletes their objects
   * @param gone told each key whose object a read found missing or damaged, which the index lets
   *     go of
   * @param readTag handed each intact object's key and user metadata, for its tag
   */
  ObjectReads(S3TierConfig config, S3AsyncClient s3, ObjectNames names, ObjectIndex index,
      StoreState store, Requests requests, DeleteQueue deletes, TierCounters counters,
      LoadRate loadRate, StoreFailure storeFailed, Consumer<List<Entry>> evict,
      Consumer<BlockKey> gone, BiConsumer<BlockKey, Map<String, String>> readTag,
      ObjectSeals seals) {
    this.readTag = readTag;
    this.seals = seals;
    this.config = config;
    this.s3 = s3;
    this.names = names;
    this.index = index;
    this.store = store;
    this.requests = requests;
    this.deletes = deletes;
    this.counters = counters;
    this.loadRate = loadRate;
    this.storeFailed = storeFailed;
    this.evict = evict;
    this.gone = gone;
  }

  /** Block bytes read and checked. */
  long bytesDownloaded() {
    return bytesDownloaded.sum();
  }

  /** Objects read whole by ranged GETs. */
  long rangedReads() {
    return ranged.sum();
  }

  /** Objects refused because their bytes did not match their checksum. */
  long damagedBlocks() {
    return damaged.sum();
  }

  /** As {@link S3Tier#get}. */
  BlockLease get(BlockKey key) {
    Fetched d = download(key, null, true);
    if (d == null || d.outcome() != Download.Outcome.INTACT) {
      return BlockLease.miss(key);
    }
    return new BufferLease(key, d.bytes(), d.crc32c(), counters);
  }

  /** As {@link S3Tier#getInto}, {@code dst} writable. */
  GetStatus getInto(BlockKey key, ByteBuffer dst) {
    Entry known = index.peek(key);
    if (known != null && blockLength(known) > dst.remaining()) {
      return GetStatus.BUFFER_TOO_SMALL;
    }
    Fetched d = download(key, dst, true);
    if (d == null) {
      return GetStatus.MISS;
    }
    return d.outcome() == Download.Outcome.INTACT ? GetStatus.HIT : GetStatus.BUFFER_TOO_SMALL;
  }

  /** A pinned block read, counted as the pin was; a miss if it is gone or changed in length. */
  GetStatus readPinned(BlockKey key, ByteBuffer dst) {
    int start = dst.position();
    Fetched d = download(key, dst, false);
    if (d == null || d.outcome() != Download.Outcome.INTACT) {
      dst.position(start);
      return GetStatus.MISS;
    }
    return GetStatus.HIT;
  }

  /**
   * Leases each block, its downloads under way at once ({@value #READ_AHEAD} at most), each into
   * a buffer of its own, checked as {@link S3Tier#get} checks it.
   */
  List<BlockLease> getAll(List<BlockKey> keys) {
    List<BlockLease> leases = new ArrayList<>(keys.size());
    PendingDownload[] pending = new PendingDownload[keys.size()];
    long start = System.nanoTime();
    long bytes = 0;
    try {
      for (int i = 0; i < keys.size(); i++) {
        for (int ahead = i; ahead < Math.min(keys.size(), i + READ_AHEAD); ahead++) {
          if (pending[ahead] == null) {
            pending[ahead] = startDownload(keys.get(ahead), null, true, false, true, true);
          }
        }
        Fetched d = pending[i].finish();
        pending[i] = null;
        boolean hit = d != null && d.outcome() == Download.Outcome.INTACT;
        bytes += hit ? d.bytes().remaining() : 0;
        leases.add(hit
            ? new BufferLease(keys.get(i), d.bytes(), d.crc32c(), counters)
            : BlockLease.miss(keys.get(i)));
      }
      long nanos = System.nanoTime() - start;
      for (BlockLease lease : leases) { // the downloads overlap: each gets its share of the time
        if (lease.status() == GetStatus.HIT) {
          loadRate.record(lease.length(), nanos * lease.length() / bytes);
        }
      }
      return leases;
    } catch (RuntimeException | Error e) {
      leases.forEach(BlockLease::close);
      for (PendingDownload p : pending) {
        if (p != null) {
          p.abandon();
        }
      }
      throw e;
    }
  }

  /**
   * Downloads a block into {@code dst} (or a buffer of its own if null) and checks it: the
   * download, {@link Download.Outcome#INTACT} or (for a {@code dst} too small, left as it was)
   * {@link Download.Outcome#TOO_LARGE}; null for a miss, with {@code dst} as it was. A read the
   * caller counted already ({@code counted} false) counts no hit or miss.
   */
  private Fetched download(BlockKey key, ByteBuffer dst, boolean counted) {
    return startDownload(key, dst, counted, true, true, true).finish();
  }

  /**
   * Sends a block's GET, as {@link #download} does, without waiting for it; {@code timed}: its
   * time goes into the load rate (not for downloads that overlap); {@code again}: a GET whose
   * connection failed under it without an answer is sent once more. The first GET asks the
   * store's state whether it may be sent (it may be the probe after a pause, and reports how it
   * fared); the one sent again does not ask, as the first's report is its own. {@code ranged}:
   * a large plain object the index knows may be read by ranged GETs.
   */
  private PendingDownload startDownload(BlockKey key, ByteBuffer dst, boolean counted,
      boolean timed, boolean again, boolean ranged) {
    Entry known = index.use(key);
    Folder folder = known != null ? known.folder() : ObjectNames.folder(key);
    String name = names.block(folder, key);
    long start = System.nanoTime();
    if (goingAway(name) || again && !store.available(start)) {
      count(counted, GetStatus.MISS);
      return PendingDownload.NONE;
    }
    boolean sealing = sealed(folder);
    if (ranged && !sealing && known != null && known.length() >= 2 * RANGE_BYTES) {
      return startRanged(key, known, name, dst, counted, timed, again, start);
    }
    GetObjectRequest request = GetObjectRequest.builder()
        .bucket(config.bucket())
        .key(name)
        // the stored checksum comes back in the answer's headers; the tier checks it itself
        .overrideConfiguration(o -> o.putHeader("x-amz-checksum-mode", "ENABLED"))
        .build();
    // a sealed object is downloaded whole, and opened into the destination once its tag holds
    Download d = sealing ? new Download(null, Sealer.sealedLength(config.maxBlockBytes()))
        : new Download(dst, config.maxBlockBytes());
    CompletableFuture<Download> answer = s3.getObject(request, d);
    return new PendingDownload(d::abandon, () -> finishDownload(key, known, folder, name, dst,
        counted, timed, again, d, answer, start));
  }

  /**
   * Sends the ranged GETs of a large plain object the index knows, as {@link #startDownload}
   * does a single GET. The ranges' answers are checked together: an object changed under them
   * (or a store that does not answer ranges) is read again by a single GET, a damaged one
   * refused.
   */
  private PendingDownload startRanged(BlockKey key, Entry known, String name, ByteBuffer dst,
      boolean counted, boolean timed, boolean again, long start) {
    int length = known.length();
    if (dst != null && length > dst.remaining()) {
      return new PendingDownload(() -> { },
          () -> new Fetched(Download.Outcome.TOO_LARGE, null, OptionalInt.empty()));
    }
    GetObjectRequest request = GetObjectRequest.builder().bucket(config.bucket()).key(name).build();
    RangedDownload r = RangedDownload.start(s3, request, dst, length, RANGE_BYTES);
    return new PendingDownload(r::abandon, () -> {
      RangedDownload.Outcome outcome;
      try {
        outcome = r.finish();
        requests.sent(Op.GET, System.nanoTime() - start);
        store.succeeded();
      } catch (CompletionException e) {
        requests.sent(Op.GET, System.nanoTime() - start);
        if (missing(e.getCause())) {
          if (index.remove(key) != null) {
            gone.accept(key);
          }
          count(counted, GetStatus.MISS);
          return null;
        }
        outcome = RangedDownload.Outcome.CHANGED; // a range refused, a connection broken
      }
      if (outcome == RangedDownload.Outcome.DAMAGED) {
        refuseDamaged(key, name, r.eTag());
        count(counted, GetStatus.MISS);
        return null;
      }
      if (outcome == RangedDownload.Outcome.CHANGED
          || ObjectSeals.sealedObject(r.metadata())) { // a single GET opens or refuses it
        r.abandon();
        return startDownload(key, dst, counted, timed, again, false).finish();
      }
      ranged.increment();
      delivered(key, length, r.metadata(), counted, timed, start);
      return new Fetched(Download.Outcome.INTACT, r.bytes(), OptionalInt.of(r.crc32c()));
    });
  }

  /** Waits for a download {@link #startDownload} sent and checks it, as {@link #download} does. */
  private Fetched finishDownload(BlockKey key, Entry known, Folder folder, String name,
      ByteBuffer dst, boolean counted, boolean timed, boolean again, Download d,
      CompletableFuture<Download> answer, long start) {
    try {
      answer.join();
      requests.sent(Op.GET, System.nanoTime() - start);
      store.succeeded();
    } catch (CompletionException e) {
      d.abandon();
      requests.sent(Op.GET, System.nanoTime() - start);
      if (again && S3Clients.connectionFailed(e.getCause())) {
        // the SDK's own retry may not start a streamed answer afresh: a new download, once
        return startDownload(key, dst, counted, timed, false, false).finish();
      }
      if (missing(e.getCause()) && index.remove(key) != null) {
        gone.accept(key);
      }
      if (storeFailed.record(e.getCause(), start)) { // a missing object is an answer: no failure
        requests.failed(Op.GET);
      }
      count(counted, GetStatus.MISS);
      return null;
    }
    switch (d.outcome()) {
      case INTACT -> {
        int length = d.length();
        if (known == null || known.length() != length) { // new here, or overwritten since
          evict.accept(index.add(key, folder, length));
        }
        Fetched fetched = sealed(folder)
            || ObjectSeals.sealedObject(d.metadata()) ? open(key, folder, name, d, dst)
            : new Fetched(Download.Outcome.INTACT, d.bytes(), OptionalInt.of(d.crc32c()));
        if (fetched == null) {
          count(counted, GetStatus.MISS);
          return null;
        }
        if (fetched.outcome() == Download.Outcome.TOO_LARGE) {
          return fetched; // as a download too large for dst: no hit or miss
        }
        delivered(key, length, d.metadata(), counted, timed, start);
        return fetched;
      }
      case DAMAGED -> {
        d.abandon();
        refuseDamaged(key, name, d.response().eTag());
      }
      case TOO_LARGE -> {
        d.abandon();
        if (dst != null) {
          return new Fetched(Download.Outcome.TOO_LARGE, null, OptionalInt.empty());
        }
      }
    }
    count(counted, GetStatus.MISS);
    return null;
  }

  /**
   * Opens the sealed object {@code d} holds into {@code dst} (or a buffer of its own if null): the
   * block, {@link Download.Outcome#TOO_LARGE} if {@code dst} has too little room, or null if it
   * does not open (an object sealed for a namespace that is not sealed here, or whose salt or
   * master key is gone, or whose tag fails), which is counted and let go of by the index; the
   * object itself stays, as another server may hold the keys to it.
   */
  private Fetched open(BlockKey key, Folder folder, String name, Download d, ByteBuffer dst) {
    Sealer sealer;
    try {
      sealer = sealed(folder) && ObjectSeals.sealedObject(d.metadata())
          ? seals.forRead(folder) : null;
    } catch (CompletionException e) {
      d.abandon();
      return null; // the salt could not be read now: a miss, the object kept in the index
    }
    ByteBuffer sealed = d.bytes();
    int length = Sealer.openedLength(sealed.remaining());
    if (sealer != null && length >= 0) {
      // a sealed namespace's object was downloaded into a buffer of its own, not into dst
      if (dst != null && length > dst.remaining()) {
        return new Fetched(Download.Outcome.TOO_LARGE, null, OptionalInt.empty());
      }
      ByteBuffer out = dst != null ? dst : ByteBuffer.allocateDirect(length);
      if (sealer.open(key, sealed, out)) {
        return new Fetched(Download.Outcome.INTACT, dst != null ? dst : out.flip(),
            OptionalInt.empty());
      }
    }
    d.abandon(); // an object marked sealed in a namespace that is not, downloaded into dst
    if (index.remove(key) != null) {
      gone.accept(key);
    }
    if (seals != null) {
      seals.failed();
    }
    log.debug("block {}: the object {} does not open ({})", key, name, sealer == null
        ? "not sealed as its namespace is here, or no salt" : "its tag fails");
    return null;
  }

  /**
   * Counts an object read whole and intact: its time in the load rate ({@code timed}), its
   * bytes, its tag from {@code metadata}, and a hit ({@code counted}).
   */
  private void delivered(BlockKey key, int length, Map<String, String> metadata, boolean counted,
      boolean timed, long start) {
    if (timed) {
      loadRate.record(length, System.nanoTime() - start);
    }
    bytesDownloaded.add(length);
    readTag.accept(key, metadata);
    count(counted, GetStatus.HIT);
  }

  /** Whether the namespace of {@code folder} is sealed here. */
  private boolean sealed(Folder folder) {
    return seals != null && seals.seals(folder);
  }

  /** The length of the block an indexed object holds: less a sealed one's overhead. */
  int blockLength(Entry known) {
    return sealed(known.folder())
        ? Math.max(0, Sealer.openedLength(known.length())) : known.length();
  }

  /**
   * A block downloaded and checked: its outcome, and for an intact one its bytes (position to
   * limit for a buffer of its own; the destination advanced past it otherwise) and the CRC32C
   * they were checked against, if they are what was stored.
   */
  private record Fetched(Download.Outcome outcome, ByteBuffer bytes, OptionalInt crc32c) {}

  /** A download under way: {@link #finish} waits for it and checks it. */
  private record PendingDownload(Runnable abandoner, Supplier<Fetched> finisher) {
    /** No download: a miss. */
    static final PendingDownload NONE = new PendingDownload(() -> { }, () -> null);

    Fetched finish() {
      return finisher.get();
    }

    /** Stops writing into the download's buffer; its answer is let go of. */
    void abandon() {
      abandoner.run();
    }
  }

  private void count(boolean counted, GetStatus status) {
    if (counted && status == GetStatus.HIT) {
      counters.hit();
    } else if (counted) {
      counters.miss();
    }
  }

  /** Whether the object is to be deleted: queued, or damaged and being deleted. */
  boolean goingAway(String name) {
    return deletes.pending(name) || refused.contains(name);
  }

  private void refuseDamaged(BlockKey key, String name, String etag) {
    damaged.increment();
    if (index.remove(key) != null) {
      gone.accept(key);
    }
    refused.add(name);
    log.warn("object {} does not match its checksum (or has none): refused as a miss and deleted",
        name);
    long start = System.nanoTime();
    s3.deleteObject(b -> b.bucket(config.bucket()).key(name).ifMatch(etag))
        .handle((ok, failure) -> {
          requests.sent(Op.DELETE, System.nanoTime() - start);
          Throwable error = failure instanceof CompletionException c && c.getCause() != null
              ? c.getCause() : failure;
          if (error != null && notImplemented(error)) {
            // a store that does not take conditional deletes: delete it all the same
            deletes.delete(name);
          } else if (error != null && storeFailed.record(error, start)) {
            // the object stays, refused again when read: a delete without its condition could
            // remove another server's fresh copy
            requests.failed(Op.DELETE);
          }
          refused.remove(name);
          return null;
        });
  }

  /** Whether the store does not implement what was asked (a conditional delete, say). */
  static boolean notImplemented(Throwable error) {
    return error instanceof AwsServiceException s && (s.statusCode() == 501
        || s.awsErrorDetails() != null && "NotImplemented".equals(s.awsErrorDetails().errorCode()));
  }

  static boolean missing(Throwable error) {
    return error instanceof AwsServiceException s && s.statusCode() == 404;
  }

  static boolean conditionFailed(Throwable error) {
    return error instanceof AwsServiceException s && s.statusCode() == 412;
  }
}
