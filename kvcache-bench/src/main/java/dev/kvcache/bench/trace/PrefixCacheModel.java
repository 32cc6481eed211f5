package dev.kvcache.bench.trace;

import java.util.function.IntPredicate;

/**
 * A cache of blocks as an inference engine uses it, one request at a time: find the longest cached
 * prefix of the request's blocks, load it, compute the rest and store it.
 */
interface PrefixCacheModel extends AutoCloseable {

  /**
   * Serves one request.
   *
   * @param ids the request's chained block ids
   * @return how many leading blocks were found in the cache
   */
  int serve(int[] ids);

  @Override
  default void close() {}

  /** How many leading ids of a request are {@code cached}: the hits an engine can use. */
  static int leadingHits(int[] ids, IntPredicate cached) {
    int hits = 0;
    while (hits < ids.length && cached.test(ids[hits])) {
      hits++;
    }
    return hits;
  }
}
