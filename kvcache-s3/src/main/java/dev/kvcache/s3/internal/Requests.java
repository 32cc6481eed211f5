package dev.kvcache.s3.internal;

import java.util.EnumMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.LongAdder;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;

/** Counts the requests a tier sends, by operation: how many, how many failed, how long they took. */
public final class Requests {

  /** The operations a tier sends. */
  public enum Op {
    GET,
    PUT,
    HEAD,
    DELETE,
    LIST
  }

  private final Map<Op, LongAdder> sent = new EnumMap<>(Op.class);
  private final Map<Op, LongAdder> failed = new EnumMap<>(Op.class);
  private final Map<Op, LongAdder> nanos = new EnumMap<>(Op.class);

  public Requests() {
    for (Op op : Op.values()) {
      sent.put(op, new LongAdder());
      failed.put(op, new LongAdder());
      nanos.put(op, new LongAdder());
    }
  }

  /** A request of {@code op} that took {@code tookNanos}. */
  public void sent(Op op, long tookNanos) {
    sent.get(op).increment();
    nanos.get(op).add(tookNanos);
  }

  /** A request of {@code op} failed for the store's reason. */
  public void failed(Op op) {
    failed.get(op).increment();
  }

  /**
   * Lists one page of the objects under {@code prefix}, counted.
   *
   * @param token the page's continuation token; null for the first page
   * @param storeFailure records a failed request with the store's state; true if it was the
   *     store's failure (then the request counts as failed)
   * @throws CompletionException if the request failed
   */
  public ListObjectsV2Response listPage(S3AsyncClient s3, String bucket, String prefix,
      String token, StoreFailure storeFailure) {
    long start = System.nanoTime();
    try {
      ListObjectsV2Response page = s3.listObjectsV2(b -> b.bucket(bucket).prefix(prefix)
          .continuationToken(token)).join();
      sent(Op.LIST, System.nanoTime() - start);
      return page;
    } catch (CompletionException e) {
      sent(Op.LIST, System.nanoTime() - start);
      if (storeFailure.record(e.getCause(), start)) {
        failed(Op.LIST);
      }
      throw e;
    }
  }

  /** Requests sent, by operation name. */
  public Map<String, Long> sent() {
    return sums(sent);
  }

  /** Failed requests, by operation name. */
  public Map<String, Long> failed() {
    return sums(failed);
  }

  /** Seconds spent, by operation name. */
  public Map<String, Double> seconds() {
    Map<String, Double> out = new TreeMap<>();
    nanos.forEach((op, n) -> out.put(op.name(), n.sum() / 1e9));
    return out;
  }

  private static Map<String, Long> sums(Map<Op, LongAdder> counts) {
    Map<String, Long> out = new TreeMap<>();
    counts.forEach((op, n) -> out.put(op.name(), n.sum()));
    return out;
  }
}
