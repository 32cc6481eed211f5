package dev.kvcache.s3.internal;

import dev.kvcache.BlockKey;
import dev.kvcache.s3.internal.ObjectIndex.Entry;
import dev.kvcache.s3.internal.ObjectNames.Folder;
import dev.kvcache.s3.internal.Requests.Op;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.function.Predicate;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;

/**
 * Asks the store whether it holds keys the index does not know: HEAD requests for a run of keys at
 * once, each waited for until a deadline, and what they find entered into the index. A lookup's
 * unknown keys cost one round trip per run rather than per key, and never more than its budget.
 */
public final class HeadLookup {

  private final S3AsyncClient s3;
  private final String bucket;
  private final ObjectNames names;
  private final ObjectIndex index;
  private final StoreState store;
  private final Requests requests;
  private final int maxBlockBytes;
  private final Predicate<String> goingAway;
  private final StoreFailure storeFailure;
  private final Consumer<List<Entry>> evict;

  /**
   * @param goingAway whether an object's deletion is under way: it counts as absent
   * @param storeFailure records a failed request with the store's state; true if it was the
   *     store's failure (a missing object is not)
   * @param evict deletes the objects of entries the index took out to make room for found ones
   */
  public HeadLookup(S3AsyncClient s3, String bucket, ObjectNames names, ObjectIndex index,
      StoreState store, Requests requests, int maxBlockBytes, Predicate<String> goingAway,
      StoreFailure storeFailure, Consumer<List<Entry>> evict) {
    this.s3 = s3;
    this.bucket = bucket;
    this.names = names;
    this.index = index;
    this.store = store;
    this.requests = requests;
    this.maxBlockBytes = maxBlockBytes;
    this.goingAway = goingAway;
    this.storeFailure = storeFailure;
    this.evict = evict;
  }

  /**
   * Asks about {@code keys} at once (those the index knows need no request) and waits for the
   * answers until {@code deadline} ({@link System#nanoTime()}).
   *
   * @return the number of leading keys the store holds; a key not answered in time counts as
   *     absent, and so do the keys after it
   */
  public int present(List<BlockKey> keys, long deadline) {
    long start = System.nanoTime();
    if (!store.available(start)) {
      return 0;
    }
    List<CompletableFuture<HeadObjectResponse>> heads = new ArrayList<>(keys.size());
    List<Folder> where = new ArrayList<>(keys.size());
    for (BlockKey key : keys) {
      Entry known = index.peek(key);
      Folder folder = known != null ? known.folder() : ObjectNames.folder(key);
      String name = names.block(folder, key);
      if (goingAway.test(name)) {
        break; // as good as gone
      }
      where.add(folder);
      heads.add(known != null ? null : s3.headObject(b -> b.bucket(bucket).key(name)));
    }
    int found = 0;
    for (int i = 0; i < heads.size(); i++) {
      CompletableFuture<HeadObjectResponse> head = heads.get(i);
      if (head == null) {
        found++;
        continue;
      }
      try {
        long left = Math.max(0, deadline - System.nanoTime());
        HeadObjectResponse answer = head.get(left, TimeUnit.NANOSECONDS);
        requests.sent(Op.HEAD, System.nanoTime() - start);
        store.succeeded();
        if (answer.contentLength() == null || answer.contentLength() < 1
            || answer.contentLength() > maxBlockBytes) {
          break;
        }
        evict.accept(index.listed(where.get(i).key(keys.get(i)), where.get(i),
            answer.contentLength().intValue()));
        found++;
      } catch (TimeoutException e) {
        break; // out of budget: unknown counts as absent
      } catch (ExecutionException e) {
        requests.sent(Op.HEAD, System.nanoTime() - start);
        if (storeFailure.record(e.getCause(), start)) { // a missing object is no failure
          requests.failed(Op.HEAD);
        }
        break;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    for (int i = found; i < heads.size(); i++) {
      CompletableFuture<HeadObjectResponse> head = heads.get(i);
      if (head != null && head.cancel(true)) {
        requests.sent(Op.HEAD, System.nanoTime() - start); // sent, and given up on
      }
    }
    // if one of these was the probe after a pause and none reported (all given up on, or none
    // sent), the next request probes
    store.abandoned(start);
    return found;
  }
}
