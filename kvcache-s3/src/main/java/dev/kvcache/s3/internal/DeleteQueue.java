package dev.kvcache.s3.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import dev.kvcache.s3.internal.Requests.Op;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.model.Delete;
import software.amazon.awssdk.services.s3.model.DeleteObjectsResponse;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;
import software.amazon.awssdk.services.s3.model.S3Error;

/**
 * Objects to delete, sent by a thread of its own in bulk ({@code DeleteObjects}, up to {@value
 * #BATCH} names a request). A name queued again by a put before it was sent is taken out of the
 * queue, and a put of a name whose delete is under way waits for it, so that a delete never
 * removes a newer object of the same name. A batch that fails for the store's reason is retried
 * after the store's back-off; the queue's length is the measure of deletes falling behind.
 *
 * <p>A delete the store refuses (an object lock, a bucket policy that denies it: an error for the
 * name in the answer, or a {@code 4xx} for the whole request) is tried again after {@link
 * #FIRST_RETRY}, doubling up to {@link #LONGEST_RETRY}, and given up after {@value #TRIES} tries:
 * each refusal and each name given up is counted ({@link #refused}, {@link #abandoned}), and a
 * warning is logged at most once a minute, with the store's code and message, so that a store
 * that refuses every delete neither spins nor floods the log.
 */
public final class DeleteQueue implements AutoCloseable {

  /** The most names in one request: S3's limit. */
  public static final int BATCH = 1000;
  /** How long, and how many, deleted names are remembered for listings under way. */
  static final int REMEMBERED_SECONDS = 300;
  static final int REMEMBERED_NAMES = 100_000;

  /** How long a refused delete waits before its second try. */
  public static final Duration FIRST_RETRY = Duration.ofSeconds(1);
  /** The longest wait between tries of a refused delete. */
  public static final Duration LONGEST_RETRY = Duration.ofMinutes(1);
  /** How many times a refused delete is tried before it is given up. */
  public static final int TRIES = 4;
  /** The least time between two warnings about refused deletes. */
  private static final long WARN_EVERY_NANOS = TimeUnit.MINUTES.toNanos(1);

  private static final Logger log = LoggerFactory.getLogger(DeleteQueue.class);

  private final S3AsyncClient s3;
  private final String bucket;
  private final StoreState store;
  private final Requests requests;
  private final StoreFailure storeFailure;
  private final LinkedHashSet<String> queued = new LinkedHashSet<>();
  private final Set<String> sending = new LinkedHashSet<>();
  /** Names deleted lately, with when their delete was answered (System.nanoTime), oldest first. */
  private final LinkedHashMap<String, Long> deletedAt = new LinkedHashMap<>();
  /** Refused names waiting for their next try, with when it is due (System.nanoTime). */
  private final LinkedHashMap<String, Long> retryAt = new LinkedHashMap<>();
  /** How many times each refused name has been refused. */
  private final HashMap<String, Integer> refusals = new HashMap<>();
  private final LongAdder deleted = new LongAdder();
  private final LongAdder refused = new LongAdder();
  private final LongAdder abandoned = new LongAdder();
  private long lastWarning = System.nanoTime() - WARN_EVERY_NANOS;
  private final Thread thread;
  private boolean closed;

  /**
   * @param storeFailure records a failed request that is the store's failure, not a refusal, with
   *     the store's state (the batch is then tried again after the back-off)
   */
  public DeleteQueue(S3AsyncClient s3, String bucket, StoreState store, Requests requests,
      StoreFailure storeFailure) {
    this.s3 = s3;
    this.bucket = bucket;
    this.store = store;
    this.requests = requests;
    this.storeFailure = storeFailure;
    this.thread = new Thread(this::run, "kvcache-s3-deletes");
    thread.setDaemon(true);
    thread.start();
  }

  /** Queues an object's deletion. */
  public void delete(String name) {
    deleteAll(List.of(name));
  }

  /** Queues the deletion of several objects at once: they go out in one request. */
  public synchronized void deleteAll(Collection<String> names) {
    if (!closed) {
      queued.addAll(names);
      notifyAll();
    }
  }

  /**
   * Makes way for a new object of this name: takes its delete out of the queue, or waits for a
   * delete of it under way to end.
   */
  public synchronized void makeWay(String name) throws InterruptedException {
    queued.remove(name);
    retryAt.remove(name);
    refusals.remove(name);
    while (sending.contains(name)) {
      wait();
    }
  }

  /** Whether a delete of this name is queued or under way: the object is as good as gone. */
  public synchronized boolean pending(String name) {
    return queued.contains(name) || sending.contains(name) || retryAt.containsKey(name);
  }

  /** The deletes not yet done, refused ones waiting for their next try included. */
  public synchronized int backlog() {
    return queued.size() + sending.size() + retryAt.size();
  }

  /** Refusals of a delete by the store, each try counted. */
  public long refused() {
    return refused.sum();
  }

  /** Deletes given up after {@value #TRIES} refusals: their objects stay in the bucket. */
  public long abandoned() {
    return abandoned.sum();
  }

  /**
   * Whether the object's delete was answered at or after {@code nanos} ({@link System#nanoTime}),
   * within the last {@value #REMEMBERED_SECONDS} seconds: a listing page asked for before that may
   * still show it.
   */
  public synchronized boolean deletedSince(String name, long nanos) {
    Long at = deletedAt.get(name);
    return at != null && at - nanos >= 0;
  }

  /** The objects deleted. */
  public long deleted() {
    return deleted.sum();
  }

  /**
   * Waits until every delete queued is done, up to {@code millis}; whether it is. Refused deletes
   * waiting for their next try are not waited for.
   */
  public synchronized boolean awaitEmpty(long millis) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    while (!queued.isEmpty() || !sending.isEmpty()) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return false;
      }
      TimeUnit.NANOSECONDS.timedWait(this, left);
    }
    return true;
  }

  private void run() {
    while (true) {
      List<String> batch;
      long start = 0;
      synchronized (this) {
        while (!closed && (!requeueDue() || !store.available(start = System.nanoTime()))) {
          try {
            wait(queued.isEmpty() ? millisToNextRetry() : StoreState.FIRST_PAUSE.toMillis());
          } catch (InterruptedException e) {
            return;
          }
        }
        if (closed) {
          return;
        }
        batch = new ArrayList<>(Math.min(BATCH, queued.size()));
        for (var it = queued.iterator(); it.hasNext() && batch.size() < BATCH; ) {
          batch.add(it.next());
          it.remove();
        }
        sending.addAll(batch);
      }
      List<String> retry = send(batch, start);
      synchronized (this) {
        batch.forEach(sending::remove);
        long now = System.nanoTime();
        for (String name : batch) {
          deletedAt.remove(name);
          deletedAt.put(name, now); // the names tried again are gone from a listing meanwhile too
        }
        for (var it = deletedAt.values().iterator(); it.hasNext(); ) {
          if (now - it.next() <= TimeUnit.SECONDS.toNanos(REMEMBERED_SECONDS)
              && deletedAt.size() <= REMEMBERED_NAMES) {
            break;
          }
          it.remove();
        }
        for (String name : retry) {
          queued.add(name);
        }
        notifyAll();
      }
    }
  }

  /** Puts the refused names whose next try is due back in the queue; whether the queue has any. */
  private boolean requeueDue() {
    long now = System.nanoTime();
    for (var it = retryAt.entrySet().iterator(); it.hasNext(); ) {
      var next = it.next();
      if (next.getValue() - now <= 0) {
        queued.add(next.getKey());
        it.remove();
      }
    }
    return !queued.isEmpty();
  }

  /** How long until the next refused name's try is due, at least 1 ms; 0 (for ever) if none. */
  private long millisToNextRetry() {
    long now = System.nanoTime();
    long soonest = Long.MAX_VALUE;
    for (long at : retryAt.values()) {
      soonest = Math.min(soonest, at - now);
    }
    return soonest == Long.MAX_VALUE ? 0 : Math.max(1, TimeUnit.NANOSECONDS.toMillis(soonest) + 1);
  }

  /**
   * The store refused to delete {@code names}, for {@code reason}: each is tried again later, or
   * given up after {@value #TRIES} refusals.
   */
  private synchronized void refusedAll(List<String> names, String reason) {
    long now = System.nanoTime();
    int givenUp = 0;
    for (String name : names) {
      refused.increment();
      if (queued.contains(name)) {
        continue; // queued anew meanwhile: its try is the next batch
      }
      int tries = refusals.merge(name, 1, Integer::sum);
      if (tries >= TRIES) {
        refusals.remove(name);
        abandoned.increment();
        givenUp++;
        continue;
      }
      long wait = Math.min(FIRST_RETRY.toNanos() << (tries - 1), LONGEST_RETRY.toNanos());
      retryAt.put(name, now + wait / 2 + ThreadLocalRandom.current().nextLong(wait / 2 + 1));
    }
    if (now - lastWarning >= WARN_EVERY_NANOS) {
      lastWarning = now;
      log.warn("the object store refused to delete {} objects ({}); {} of them given up after {}"
          + " tries, the others tried again later (deletes refused so far: {}, given up: {})",
          names.size(), reason, givenUp, TRIES, refused.sum(), abandoned.sum());
    } else {
      log.debug("the object store refused to delete {} objects ({})", names.size(), reason);
    }
  }

  /**
   * Sends one batch, let through by the store's state at {@code start}; returns the names to try
   * again.
   */
  private List<String> send(List<String> batch, long start) {
    List<ObjectIdentifier> ids = new ArrayList<>(batch.size());
    batch.forEach(name -> ids.add(ObjectIdentifier.builder().key(name).build()));
    try {
      DeleteObjectsResponse answer = s3.deleteObjects(b -> b.bucket(bucket)
          .delete(Delete.builder().objects(ids).quiet(true).build())).join();
      requests.sent(Op.DELETE, System.nanoTime() - start);
      store.succeeded();
      Set<String> refusedNames = new LinkedHashSet<>();
      String reason = null;
      for (S3Error e : answer.errors()) {
        // a name that is already gone is no error
        if (!"NoSuchKey".equals(e.code())) {
          refusedNames.add(e.key());
          reason = reason != null ? reason : e.code() + ": " + e.message();
        }
      }
      deleted.add(batch.size() - refusedNames.size());
      forgetRefusals(batch, refusedNames);
      if (!refusedNames.isEmpty()) {
        refusedAll(List.copyOf(refusedNames), reason);
      }
      return List.of();
    } catch (CompletionException e) {
      requests.sent(Op.DELETE, System.nanoTime() - start);
      Throwable error = e.getCause();
      if (refusal(error)) {
        store.succeeded(); // the store answers: it refuses these deletes
        refusedAll(batch, error.getMessage());
        return List.of();
      }
      storeFailure.record(error, start); // what is not a refusal is the store's failure
      requests.failed(Op.DELETE);
      return batch;
    }
  }

  /** Forgets the refusals of the names of a batch the store deleted (all but {@code refused}). */
  private synchronized void forgetRefusals(List<String> batch, Set<String> refused) {
    if (refusals.isEmpty()) {
      return;
    }
    for (String name : batch) {
      if (!refused.contains(name)) {
        refusals.remove(name);
      }
    }
  }

  /**
   * Whether a bulk delete failed because the store refuses it (403 AccessDenied, a bucket policy,
   * another client error), not because it is unreachable, throttling or failing.
   */
  private static boolean refusal(Throwable error) {
    if (!(error instanceof AwsServiceException s)) {
      return false;
    }
    int status = s.statusCode();
    return status >= 400 && status < 500 && status != 408 && status != 429;
  }

  @Override
  public void close() {
    synchronized (this) {
      closed = true;
      notifyAll();
    }
    try {
      thread.join(TimeUnit.SECONDS.toMillis(5));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
