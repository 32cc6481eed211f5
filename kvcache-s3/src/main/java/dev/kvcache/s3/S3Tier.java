package dev.kvcache.s3;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.BlockWriter;
import dev.kvcache.CacheHealth;
import dev.kvcache.CacheStats;
import dev.kvcache.GetStatus;
import dev.kvcache.Namespace;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.s3.internal.DeleteQueue;
import dev.kvcache.s3.internal.Fleet;
import dev.kvcache.s3.internal.FleetLookup;
import dev.kvcache.s3.internal.FolderDrop;
import dev.kvcache.s3.internal.Folders;
import dev.kvcache.s3.internal.HeadLookup;
import dev.kvcache.s3.internal.Lister;
import dev.kvcache.s3.internal.ObjectIndex.Entry;
import dev.kvcache.s3.internal.ObjectIndex;
import dev.kvcache.s3.internal.ObjectNames.Folder;
import dev.kvcache.s3.internal.ObjectNames;
import dev.kvcache.s3.internal.ObjectTags;
import dev.kvcache.s3.internal.Requests;
import dev.kvcache.s3.internal.StoreState;
import dev.kvcache.spi.AbstractTier;
import dev.kvcache.spi.BlockTags;
import dev.kvcache.spi.Crc32c;
import dev.kvcache.spi.LoadRate;
import dev.kvcache.spi.NamespaceDrop;
import dev.kvcache.spi.NamespaceRemoval;
import dev.kvcache.spi.PinnedPrefix;
import dev.kvcache.spi.TierVisitor;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.services.s3.S3AsyncClient;

/**
 * A tier of blocks in an S3-compatible object store (AWS S3, Ceph RGW, SeaweedFS, Versity, MinIO):
 * the bottom of RAM → disk → object store, shared by every server of a fleet.
 *
 * <p><b>Names.</b> A block is the object {@code <prefix><folder>/<key>}, where the folder is its
 * namespace's ({@link BlockKey#namespace()}); every server, and a restarted one, finds what any
 * of them wrote. Each folder holds a descriptor naming its namespace.
 *
 * <p><b>Never wrong bytes.</b> Each block is uploaded with its CRC32C as the object's {@code
 * x-amz-checksum-crc32c}, which the store checks on arrival, and in the object's metadata for stores
 * that keep no checksums. Every read checks the bytes as it copies them; an object that does not
 * match is a miss, counted ({@link S3Stats#damagedBlocks()}), and deleted if it is still the object
 * read (a conditional delete on its ETag, so that another server's fresh copy survives).
 *
 * <p><b>Lookups.</b> A presence index ({@link S3TierConfig#indexEntries()} objects at most) knows
 * the objects this tier wrote and read and those a listing of the bucket found, at start and every
 * {@link S3TierConfig#listInterval()}. A lookup asks the store (HEAD) about keys the index does not
 * know for at most {@link S3TierConfig#lookupBudget()}; {@link #contains} asks the index alone.
 *
 * <p><b>Bounded.</b> The objects this server owns hold at most its share of {@link
 * S3TierConfig#capacityBytes()}; past it, the least recently used are deleted, in bulk, by a
 * thread of the tier's. A server alone owns every object; in a fleet ({@link S3TierConfig#fleet()}),
 * each server owns the objects of the keys the clients send it (rendezvous hashing), so each object
 * is evicted by the one server that sees its uses, and a server's share is the capacity divided by
 * the number of servers. Reads served by the tiers above count as uses ({@link #usedAbove}), so
 * what is hot in RAM and on disk stays here.
 *
 * <p><b>Faults.</b> A store that is unreachable, slow or failing never makes a call throw: reads
 * are misses and puts answer {@link PutStatus#NOT_ADMITTED}. Throttled requests are sent again
 * after a jittered pause; after three failures in a row the tier sends nothing for a pause, then
 * one probe, the pause doubling while probes fail ({@link #health()} says so). A delete the store
 * refuses is tried again later and given up after a few tries, without a pause.
 *
 * <p><b>Sealed namespaces.</b> The objects of namespaces sealed at rest ({@link
 * S3TierConfig.Builder#sealing}) hold their blocks sealed with AES-256-GCM, under a key derived
 * from the master keys and the namespace's salt, an object of its folder ({@link #shred} deletes
 * it, and with it every way to open them).
 *
 * <p><b>Puts never delete.</b> A key names its block's content, so a put of a key the bucket
 * holds keeps the object other servers read ({@link #supersede}); only a delete, an eviction by
 * the object's owner, a damaged read or a dropped namespace removes it.
 */
public final class S3Tier extends AbstractTier implements NamespaceDrop, NamespaceRemoval {

  private static final Logger log = LoggerFactory.getLogger(S3Tier.class);
  /** The most HEAD requests one lookup has under way at once. */
  private static final int LOOKUP_PARALLELISM = 8;
  /** How often a fleet found by DNS is looked up again: as often as the clients do. */
  private static final Duration FLEET_LOOKUP = Duration.ofSeconds(30);

  private final S3TierConfig config;
  private final S3Clients client;
  private final S3AsyncClient s3;
  private final ObjectNames names;
  private final ObjectIndex index;
  private final StoreState store;
  private final Requests requests = new Requests();
  private final DeleteQueue deletes;
  private final Folders folders;
  private final Lister lister;
  private final FleetLookup fleet;
  private final HeadLookup heads;
  private final ObjectReads reads;
  private final S3Meters meters;
  private final ScheduledExecutorService listing;
  private final LoadRate loadRate = new LoadRate();
  private final ObjectSeals seals;
  private final ObjectUploads uploads;
  private volatile boolean closed;

  private S3Tier(S3TierConfig config, S3Clients client, Duration saltRecheck) {
    this.config = config;
    this.client = client;
    this.s3 = client.s3();
    this.names = new ObjectNames(config.prefix());
    this.store = new StoreState(config.requestTimeout().multipliedBy(2));
    this.fleet = config.fleetDns().map(dns -> FleetLookup.dns(dns, config.fleetSelf().orElse(null)))
        .orElseGet(() -> config.fleet().isEmpty() ? FleetLookup.alone()
            : FleetLookup.of(config.fleet(), config.fleetSelf().orElseThrow()));
    Map<String, Long> quotas = new HashMap<>();
    config.quotas().forEach((ns, bytes) -> quotas.put(ObjectNames.folder(ns).id(), bytes));
    this.index = new ObjectIndex(config.capacityBytes(), config.indexEntries(),
        fleet.find().orElse(Fleet.UNKNOWN), quotas);
    this.deletes = new DeleteQueue(s3, config.bucket(), store, requests, this::storeFailed);
    this.folders = new Folders(s3, config.bucket(), names, requests, this::storeFailed);
    this.seals = config.sealed().isEmpty() ? null : new ObjectSeals(s3, config.bucket(), names,
        requests, this::storeFailed, config.masterKeys(), config.sealed(), saltRecheck);
    this.uploads = new ObjectUploads(config.bucket(), s3, names, store, requests, deletes,
        folders, seals, this::storeFailed);
    this.reads = new ObjectReads(config, s3, names, index, store, requests, deletes, counters(),
        loadRate, this::storeFailed, this::evict, this::removed, this::readTag, seals);
    this.lister = new Lister(s3, config.bucket(), names, folders, index, requests,
        this::storeFailed, reads::goingAway, deletes, this::evict);
    this.heads = new HeadLookup(s3, config.bucket(), names, index, store, requests,
        config.maxBlockBytes(), reads::goingAway, this::storeFailed, this::evict);
    this.meters = new S3Meters(name(), config, requests, uploads, reads, seals, deletes, lister,
        store, index);
    this.listing = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "kvcache-s3-listing");
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * Opens a tier and starts listing the bucket in the background; the tier serves at once (keys
   * not listed yet are found by HEAD requests).
   *
   * @throws IOException if the TLS settings cannot be read
   */
  public static S3Tier open(S3TierConfig config) throws IOException {
    return open(config, ObjectSeals.RECHECK);
  }

  /** As {@link #open(S3TierConfig)}, with sealed namespaces' salts read again this often. */
  static S3Tier open(S3TierConfig config, Duration saltRecheck) throws IOException {
    Objects.requireNonNull(config, "config");
    S3Tier tier = new S3Tier(config, S3Clients.of(config), saltRecheck);
    tier.listing.scheduleWithFixedDelay(tier.index::applyUses, 1, 1, TimeUnit.SECONDS);
    if (tier.fleet.changes()) {
      tier.listing.scheduleWithFixedDelay(tier::findFleet, FLEET_LOOKUP.toMillis(),
          FLEET_LOOKUP.toMillis(), TimeUnit.MILLISECONDS);
    }
    long every = config.listInterval().toMillis();
    if (every > 0) {
      tier.listing.scheduleWithFixedDelay(tier::listQuietly, 0, every, TimeUnit.MILLISECONDS);
    } else {
      tier.listing.execute(tier::listQuietly);
    }
    log.info("object tier opened: {}", config);
    tier.fleetProblem(tier.index.fleet()).ifPresent(log::warn);
    return tier;
  }

  /** Looks the fleet up again; if it changed, divides the objects anew and evicts what no longer fits. */
  private void findFleet() {
    if (closed) {
      return;
    }
    fleet.find().ifPresent(now -> {
      Fleet was = index.fleet();
      List<Entry> evicted = index.reassign(now);
      if (!now.equals(was)) {
        log.info("the fleet sharing the bucket is now {}; this server owns {} objects", now,
            index.ownedSize());
        fleetProblem(now).ifPresent(log::warn);
      }
      evict(evicted);
    });
  }

  private void listQuietly() {
    index.applyUses();
    if (!closed && !store.paused()) {
      try {
        lister.list();
      } catch (RuntimeException e) {
        log.warn("listing the object store failed", e);
      }
    }
  }

  /**
   * Lists the bucket now, in the caller's thread, after a listing under way ends.
   *
   * @return whether the listing went through the whole bucket
   */
  public boolean listNow() {
    ensureOpen();
    return lister.list();
  }

  @Override
  public String name() {
    return "s3";
  }

  @Override
  public long capacityBytes() {
    return config.capacityBytes();
  }

  @Override
  public int maxBlockBytes() {
    return config.maxBlockBytes();
  }

  @Override
  public LoadRate loadRate() {
    return loadRate;
  }

  @Override
  protected PutStatus store(BlockKey key, ByteBuffer src) {
    // a sealed block's object is checksummed once sealed
    return upload(key, src.duplicate(),
        uploads.seals(ObjectNames.folder(key)) ? 0 : Crc32c.of(src));
  }

  @Override
  protected BlockWriter openWriter(BlockKey key, int length) {
    return new S3Writer(this, key, length);
  }

  /**
   * Tells the listener, if it is a {@link BlockTags}, the tag block {@code key}'s object kept in
   * its {@code metadata}, as a read finds it: a bucket is listed without its objects' metadata,
   * so its tags are told as its blocks are read, not when the tier starts.
   */
  private void readTag(BlockKey key, Map<String, String> metadata) {
    BlockTags tags = tags();
    if (tags != null) {
      byte[] tag = ObjectTags.decode(key, metadata);
      if (tag != null) {
        tags.found(name(), key, tag);
      }
    }
  }

  /**
   * Uploads a block from {@code body} (position to limit, read in place) under its key's name,
   * with its checksum; evicts what no longer fits.
   */
  PutStatus upload(BlockKey key, ByteBuffer body, int crc32c) {
    ensureOpen();
    Folder folder = ObjectNames.folder(key);
    Entry old = index.peek(key);
    int length = uploads.upload(key, folder, body, crc32c, tagOf(key));
    if (length < 0) {
      return PutStatus.NOT_ADMITTED;
    }
    if (old != null && !old.folder().id().equals(folder.id())) {
      deletes.delete(names.block(old.folder(), key)); // the key's copy under another name
    }
    List<Entry> evicted = index.add(key, folder, length);
    stored(key);
    evict(evicted);
    counters().put();
    return PutStatus.STORED;
  }

  /** Counts as a use of the key's object, so that the blocks hot above stay in the bucket. */
  @Override
  public void usedAbove(BlockKey key) {
    index.useLater(key);
  }

  @Override
  protected BlockLease lease(BlockKey key) {
    return reads.get(key);
  }

  @Override
  protected GetStatus copyInto(BlockKey key, ByteBuffer dst) {
    return reads.getInto(key, dst);
  }

  /**
   * Leases each block, its downloads under way at once ({@value ObjectReads#READ_AHEAD} at most),
   * each into a buffer of its own, checked as {@link #get} checks it.
   */
  @Override
  protected List<BlockLease> leaseAll(List<BlockKey> keys) {
    return reads.getAll(keys);
  }

  /**
   * Pins the leading keys the store holds, found as {@link #lookupPrefix} finds them, without
   * downloading them: each is marked used, so that this server evicts it last, and is downloaded
   * only when read through the pin. A block another server, a lifecycle rule or a namespace drop
   * deletes meanwhile reads as a miss. Each pinned block counts as a hit, the first key not found
   * as a miss.
   */
  @Override
  protected PrefixPin pin(List<BlockKey> keys, Duration timeout) {
    int found = countPrefix(keys);
    int[] lengths = new int[found];
    int n = 0;
    for (Entry known; n < found && (known = index.use(keys.get(n))) != null; n++) {
      lengths[n] = reads.blockLength(known); // a key found by HEAD is known unless the index is full
    }
    counters().hits(n);
    if (n < keys.size()) {
      counters().miss();
    }
    return PinnedPrefix.over(new ObjectPin(List.copyOf(keys.subList(0, n)), lengths, reads::readPinned),
        timeout);
  }

  /** Counts the entries the index let go of as evictions, and queues their objects' deletion. */
  private void evict(List<Entry> evicted) {
    if (evicted.isEmpty()) {
      return;
    }
    List<String> gone = new ArrayList<>(evicted.size());
    for (Entry cold : evicted) {
      counters().eviction();
      gone.add(names.block(cold.folder(), cold.key()));
      removed(cold.key());
    }
    deletes.deleteAll(gone);
  }

  /**
   * Whether the index knows the key: no request is sent, so a block another server stored since
   * the last listing is not seen here (a prefix lookup asks the store about it).
   */
  @Override
  protected boolean holds(BlockKey key) {
    Entry known = index.peek(key);
    return known != null && !reads.goingAway(names.block(known.folder(), key));
  }

  /**
   * Counts the leading keys the store holds: those the index knows, and those the store says it
   * holds when asked (HEAD, {@value #LOOKUP_PARALLELISM} at a time) within the lookup budget.
   */
  @Override
  protected int countPrefix(List<BlockKey> keys) {
    long deadline = System.nanoTime() + config.lookupBudget().toNanos();
    int n = 0;
    while (n < keys.size()) {
      BlockKey key = keys.get(n);
      Entry known = index.peek(key);
      if (known != null && !reads.goingAway(names.block(known.folder(), key))) {
        n++;
        continue;
      }
      if (config.lookupBudget().isZero()) {
        break;
      }
      int found = heads.present(keys.subList(n, Math.min(keys.size(), n + LOOKUP_PARALLELISM)),
          deadline);
      n += found;
      if (found < Math.min(keys.size() - (n - found), LOOKUP_PARALLELISM)) {
        break;
      }
    }
    return n;
  }

  /**
   * Keeps the key's object: a put above re-stores a key whose block, named by its content, is the
   * one the bucket holds, and other servers of the fleet read it. The put's upload, if any,
   * replaces it with the same bytes.
   *
   * @return false: nothing is removed
   */
  @Override
  public boolean supersede(BlockKey key) {
    Objects.requireNonNull(key, "key");
    ensureOpen();
    return false;
  }

  /**
   * Deletes the key's object if the index knows it (queued, and sent in bulk). A key the index does
   * not know costs no request; a copy another server stored since the last listing stays until
   * evicted.
   */
  @Override
  protected boolean remove(BlockKey key) {
    Entry known = index.remove(key);
    if (known == null) {
      return false;
    }
    deletes.delete(names.block(known.folder(), key));
    counters().delete();
    removed(key);
    return true;
  }

  @Override
  public CacheStats stats() {
    return counters().snapshot(index.size(), index.bytes(), config.capacityBytes(), 0, 0);
  }

  /**
   * Reports the tier's reads and bytes, and what it asks of the store: what the store bills for
   * (requests by operation), the bytes each way, errors, time, damaged objects, whether deletes
   * keep up, its back-off, and its place in the fleet.
   */
  @Override
  public void describe(TierVisitor visitor, LongSupplier hits) {
    super.describe(visitor, hits);
    meters.describe(visitor);
  }

  /** Objects read whole by ranged GETs under way at once. */
  long rangedReads() {
    return reads.rangedReads();
  }

  /** What the tier has asked of the store, and how it fared. */
  public S3Stats s3Stats() {
    return meters.stats();
  }

  /**
   * Degraded while the store fails (the tier backs off), and while this server is not among its
   * fleet's servers: it then owns no object and evicts none, so the bucket is not held to its
   * capacity.
   */
  @Override
  public CacheHealth health() {
    List<String> problems = new ArrayList<>(2);
    store.problem().ifPresent(problems::add);
    fleetProblem(index.fleet()).ifPresent(problems::add);
    return problems.isEmpty() ? CacheHealth.OK : new CacheHealth(problems);
  }

  /** What is wrong with this server's place in the fleet, if anything. */
  private Optional<String> fleetProblem(Fleet now) {
    if (now.member()) {
      return Optional.empty();
    }
    if (now == Fleet.UNKNOWN) {
      return Optional.of("the fleet's DNS name " + fleet + " has not been looked up: this server"
          + " owns no object of the bucket and evicts none");
    }
    return Optional.of("this server is not among the fleet's servers " + now.members() + " ("
        + fleet + "): it owns no object of the bucket and evicts none, so the bucket is not held"
        + " to its capacity; the fleet's DNS name must list each server's own address (a headless"
        + " Service, not a virtual IP) with the clients' port, or set fleet-self to this server's"
        + " address as the name lists it");
  }

  /**
   * Drops a namespace's blocks from the bucket whole: a sealed namespace's salt first ({@link
   * #shred}), then every object in its folder, whichever server wrote it, and its descriptor. The deletes go out in bulk behind the call ({@link
   * #awaitDeletes}). Other servers' indexes let go of the objects at their next listing; until
   * then, a read of one there is a miss. Copies in the tiers above (RAM, disk) are not this tier's,
   * and blocks stored into the namespace while it is being dropped may or may not survive.
   *
   * @return the number of blocks queued for deletion
   * @throws IllegalStateException if the store failed to list the folder (what was queued is
   *     deleted; the call can be repeated)
   */
  @Override
  public long dropNamespace(Namespace namespace) {
    Objects.requireNonNull(namespace, "namespace");
    ensureOpen();
    Folder folder = ObjectNames.folder(namespace);
    shred(namespace);
    long blocks = FolderDrop.drop(s3, config.bucket(), names, folder, deletes, requests,
        this::storeFailed);
    List<BlockKey> known = index.removeFolder(folder.id());
    known.forEach(this::removed);
    folders.forget(folder);
    log.info("namespace {} dropped from the bucket: {} blocks ({} known to this server)",
        namespace, blocks, known.size());
    return blocks;
  }

  /**
   * Destroys a sealed namespace's salt in the bucket: no object sealed under it opens again, on
   * this server at once and on the fleet's others within a minute, before any of its objects is
   * deleted; a later sealed put makes a new salt. Nothing happens for a namespace not sealed.
   *
   * @return whether there was a salt
   * @throws IllegalStateException if the store failed to delete it
   */
  public boolean shred(Namespace namespace) {
    Objects.requireNonNull(namespace, "namespace");
    ensureOpen();
    return seals != null && seals.seals(ObjectNames.folder(namespace)) && seals.shred(namespace);
  }

  /** As {@link #shred}. */
  @Override
  public boolean shredNamespace(Namespace namespace) {
    return shred(namespace);
  }

  /** As {@link #dropNamespace}, which shreds the namespace first. */
  @Override
  public Map<String, Long> removeNamespace(Namespace namespace) {
    return Map.of(name(), dropNamespace(namespace));
  }

  /** Sealed objects that did not open (their tag failed, their salt or key is gone). */
  public long sealFailures() {
    return seals == null ? 0 : seals.failures();
  }

  /**
   * Waits until the objects queued for deletion are deleted, up to {@code millis}.
   *
   * @return whether none is left
   */
  public boolean awaitDeletes(long millis) throws InterruptedException {
    return deletes.awaitEmpty(millis);
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    listing.shutdownNow();
    try {
      if (!deletes.awaitEmpty(TimeUnit.SECONDS.toMillis(5))) {
        log.warn("{} objects queued for deletion were not deleted before close",
            deletes.backlog());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    deletes.close();
    client.close();
  }

  /**
   * Records a failed request: the store's failure (unreachable, timed out, throttled, 5xx, refused
   * credentials) starts or lengthens the back-off; a missing object or a refused condition does
   * not.
   *
   * @return whether it was the store's failure
   */
  private boolean storeFailed(Throwable error, long sentNanos) {
    if (ObjectReads.missing(error) || ObjectReads.conditionFailed(error)
        || error instanceof AwsServiceException s && s.statusCode() == 400) {
      // an answer about the object, or a request the store refused (a checksum that does not
      // match): the store answers
      store.succeeded();
      return false;
    }
    if (error instanceof AwsServiceException || error instanceof SdkClientException) {
      store.failed(error.getClass().getSimpleName() + ": " + error.getMessage(), sentNanos);
      return true;
    }
    store.failed(error.toString(), sentNanos);
    return true;
  }

  @Override
  protected void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("the object tier is closed");
    }
  }

  @Override
  public String toString() {
    return "S3Tier[" + config + "]";
  }
}
