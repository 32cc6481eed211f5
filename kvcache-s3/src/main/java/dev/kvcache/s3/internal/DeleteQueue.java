package dev.kvcache.s3.internal;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Predicate;
import dev.kvcache.s3.internal.Requests.Op;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.model.Delete;
import software.amazon.awssdk.services.s3.model.DeleteObjectsResponse;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;

/**
 * Objects to delete, sent by a thread of its own in bulk ({@code DeleteObjects}, up to {@value
 * #BATCH} names a request). A name queued again by a put before it was sent is taken out of the
 * queue, and a put of a name whose delete is under way waits for it, so that a delete never
 * removes a newer object of the same name. A batch that fails is retried after the store's
 * back-off; the queue's length is the measure of deletes falling behind.
 */
public final class DeleteQueue implements AutoCloseable {

  /** The most names in one request: S3's limit. */
  public static final int BATCH = 1000;
  /** How long, and how many, deleted names are remembered for listings under way. */
  static final int REMEMBERED_SECONDS = 300;
  static final int REMEMBERED_NAMES = 100_000;

  private static final Logger log = LoggerFactory.getLogger(DeleteQueue.class);

  private final S3AsyncClient s3;
  private final String bucket;
  private final StoreState store;
  private final Requests requests;
  private final Predicate<Throwable> storeFailure;
  private final LinkedHashSet<String> queued = new LinkedHashSet<>();
  private final Set<String> sending = new LinkedHashSet<>();
  /** Names deleted lately, with when their delete was answered (System.nanoTime), oldest first. */
  private final LinkedHashMap<String, Long> deletedAt = new LinkedHashMap<>();
  private final LongAdder deleted = new LongAdder();
  private final Thread thread;
  private boolean closed;

  /**
   * @param storeFailure records a failed request with the store's state and says whether it was
   *     the store's failure (to retry) rather than a refusal
   */
  public DeleteQueue(S3AsyncClient s3, String bucket, StoreState store, Requests requests,
      Predicate<Throwable> storeFailure) {
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
    while (sending.contains(name)) {
      wait();
    }
  }

  /** Whether a delete of this name is queued or under way: the object is as good as gone. */
  public synchronized boolean pending(String name) {
    return queued.contains(name) || sending.contains(name);
  }

  /** The deletes not yet done. */
  public synchronized int backlog() {
    return queued.size() + sending.size();
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

  /** Waits until every delete queued is done, up to {@code millis}; whether it is. */
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
      synchronized (this) {
        while (!closed && (queued.isEmpty() || !store.available())) {
          try {
            wait(queued.isEmpty() ? 0 : StoreState.FIRST_PAUSE.toMillis());
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
      List<String> retry = send(batch);
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

  /** Sends one batch; returns the names to try again. */
  private List<String> send(List<String> batch) {
    List<ObjectIdentifier> ids = new ArrayList<>(batch.size());
    batch.forEach(name -> ids.add(ObjectIdentifier.builder().key(name).build()));
    long start = System.nanoTime();
    try {
      DeleteObjectsResponse answer = s3.deleteObjects(b -> b.bucket(bucket)
          .delete(Delete.builder().objects(ids).quiet(true).build())).join();
      requests.sent(Op.DELETE, System.nanoTime() - start);
      store.succeeded();
      List<String> retry = new ArrayList<>();
      answer.errors().forEach(e -> {
        // a name that is already gone is no error; anything else is tried again
        if (!"NoSuchKey".equals(e.code())) {
          retry.add(e.key());
        }
      });
      deleted.add(batch.size() - retry.size());
      if (!retry.isEmpty()) {
        log.warn("the object store refused to delete {} of {} objects (first: {} {}); trying again",
            retry.size(), batch.size(), answer.errors().get(0).code(),
            answer.errors().get(0).message());
      }
      return retry;
    } catch (CompletionException e) {
      requests.sent(Op.DELETE, System.nanoTime() - start);
      if (storeFailure.test(e.getCause())) {
        requests.failed(Op.DELETE);
        return batch;
      }
      log.warn("the object store refused a bulk delete of {} objects: {}", batch.size(),
          e.getCause().toString());
      return List.of();
    }
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
