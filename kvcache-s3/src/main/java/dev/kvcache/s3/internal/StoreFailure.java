package dev.kvcache.s3.internal;

/**
 * Records a failed request with the store's state ({@link StoreState#failed}) and says whether it
 * was the store's failure (unreachable, timed out, throttled, failing) rather than an answer about
 * the object (missing, a refused condition, a refused checksum).
 */
@FunctionalInterface
public interface StoreFailure {

  /**
   * @param error why the request failed
   * @param sentNanos when it was sent ({@link System#nanoTime}): a request sent before the store's
   *     back-off began fails as part of the burst that began it, and does not lengthen it
   * @return whether it was the store's failure
   */
  boolean record(Throwable error, long sentNanos);
}
