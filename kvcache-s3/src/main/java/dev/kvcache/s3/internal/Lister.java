package dev.kvcache.s3.internal;

import dev.kvcache.BlockKey;
import dev.kvcache.s3.internal.ObjectNames.Folder;
import dev.kvcache.s3.internal.ObjectNames.Named;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.concurrent.CompletionException;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * Lists the tier's objects in the bucket into its index: at start, so that a restarted server finds
 * what it and the others stored, and then periodically, to learn of what other servers wrote and
 * deleted. The first listing enters objects in the order they were written (oldest least recently
 * used); later ones add objects new to the index as recently used and drop entries of objects
 * that are gone.
 *
 * <p>To sort them, the first listing holds the objects it found, at most as many as the index
 * holds ({@link ObjectIndex#maxEntries()}), so that a bucket of a billion objects costs no more
 * heap than the index itself: past that number, it lets go of the oldest object another server
 * owns, or if there is none, the oldest this server owns, which it deletes, as the index would
 * have evicted it.
 */
public final class Lister {

  private static final Logger log = LoggerFactory.getLogger(Lister.class);
  private static final int PROGRESS_EVERY = 100_000;

  private final S3AsyncClient s3;
  private final String bucket;
  private final ObjectNames names;
  private final Folders folders;
  private final ObjectIndex index;
  private final Requests requests;
  private final StoreFailure storeFailure;
  private final Predicate<String> goingAway;
  private final DeleteQueue deletes;
  private final Consumer<List<ObjectIndex.Entry>> evict;
  private volatile long listings;
  private volatile double lastSeconds;
  private volatile long lastObjects;
  private volatile long lastHeldPeak;
  private boolean listedOnce;

  /**
   * @param storeFailure records a failed request with the store's state; true if it was the
   *     store's failure
   * @param goingAway whether an object's deletion is under way: a listing passes it by, since
   *     the page listing it may be older than the eviction
   * @param deletes the tier's deletes: an object deleted after its page was asked for is passed
   *     by too
   * @param evict deletes the objects of entries the index took out to make room for listed ones
   */
  public Lister(S3AsyncClient s3, String bucket, ObjectNames names, Folders folders,
      ObjectIndex index, Requests requests, StoreFailure storeFailure,
      Predicate<String> goingAway, DeleteQueue deletes, Consumer<List<ObjectIndex.Entry>> evict) {
    this.s3 = s3;
    this.bucket = bucket;
    this.names = names;
    this.folders = folders;
    this.index = index;
    this.requests = requests;
    this.storeFailure = storeFailure;
    this.goingAway = goingAway;
    this.deletes = deletes;
    this.evict = evict;
  }

  private record Listed(BlockKey key, Folder folder, int length, Instant written, boolean owned) {}

  /** The order in which the first listing lets go of objects: others' first, then the oldest. */
  private static final Comparator<Listed> LET_GO_FIRST = Comparator.comparing(Listed::owned)
      .thenComparing(Listed::written, Comparator.nullsFirst(Comparator.naturalOrder()));

  /**
   * Lists every object under the prefix once.
   *
   * @return whether the listing went through the whole bucket
   */
  public synchronized boolean list() {
    long start = System.nanoTime();
    boolean first = !listedOnce;
    int number = index.startListing();
    PriorityQueue<Listed> found = new PriorityQueue<>(LET_GO_FIRST);
    int held = 0;
    long objects = 0;
    String token = null;
    do {
      ListObjectsV2Response page;
      long asked = System.nanoTime();
      try {
        page = requests.listPage(s3, bucket, names.prefix(), token, storeFailure);
      } catch (CompletionException e) {
        log.warn("listing the object store failed after {} objects: {}", objects,
            e.getCause().toString());
        return false;
      }
      for (S3Object o : page.contents()) {
        Optional<Named> named = names.parse(o.key());
        if (named.isEmpty() || o.size() == null || o.size() < 1 || o.size() > Integer.MAX_VALUE
            || goingAway.test(o.key()) || deletes.deletedSince(o.key(), asked)) {
          continue;
        }
        Folder folder = folders.folder(named.get().folder());
        BlockKey key = folder.key(named.get().key());
        if (first) {
          found.add(new Listed(key, folder, o.size().intValue(), o.lastModified(),
              index.owns(key)));
          if (found.size() > index.maxEntries()) {
            Listed out = found.poll();
            if (out.owned()) { // the index would have evicted it: it has no room for it
              evict.accept(List.of(ObjectIndex.unindexed(out.key(), out.folder(), out.length())));
            }
          }
          held = Math.max(held, found.size());
        } else {
          evict.accept(index.listed(key, folder, o.size().intValue()));
        }
        if (++objects % PROGRESS_EVERY == 0) {
          log.info("listed {} objects of the bucket {} so far", objects, bucket);
        }
      }
      token = Boolean.TRUE.equals(page.isTruncated()) ? page.nextContinuationToken() : null;
    } while (token != null);
    if (first) {
      List<Listed> oldestFirst = new ArrayList<>(found);
      found.clear();
      oldestFirst.sort(Comparator.comparing(Listed::written,
          Comparator.nullsFirst(Comparator.naturalOrder())));
      for (Listed l : oldestFirst) {
        String name = names.block(l.folder(), l.key());
        if (!goingAway.test(name) && !deletes.deletedSince(name, start)) {
          evict.accept(index.listed(l.key(), l.folder(), l.length()));
        }
      }
    }
    int gone = index.endListing(number);
    listedOnce = true;
    listings++;
    lastObjects = objects;
    lastHeldPeak = held;
    lastSeconds = (System.nanoTime() - start) / 1e9;
    if (first || gone > 0) {
      log.info("listed {} objects under {}/{} in {} s; {} known objects are gone", objects, bucket,
          names.prefix(), String.format("%.2f", lastSeconds), gone);
    }
    return true;
  }

  /** Complete listings made. */
  public long listings() {
    return listings;
  }

  /** How long the last complete listing took. */
  public double lastSeconds() {
    return lastSeconds;
  }

  /**
   * The most objects the last complete listing held in memory at once (the first listing holds
   * them to sort them; later ones hold none).
   */
  public long lastHeldPeak() {
    return lastHeldPeak;
  }

  /** Objects the last complete listing found. */
  public long lastObjects() {
    return lastObjects;
  }
}
