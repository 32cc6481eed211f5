package dev.kvcache.spi;

import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;

/**
 * Receives what the tiers of a cache count, as {@link Tier#describe} hands it down the stack: each
 * tier reports the reads it served, its bytes and the counters of its own, so that a reader (the
 * server's metrics) learns the stack's shape and figures without knowing any tier's class, as
 * CacheLib's Navy hands a counter visitor to each of its parts.
 *
 * <p>Values are given as suppliers, read whenever the visitor reads them: a visitor that registers
 * them with a metrics registry reads them at each scrape. Suppliers must be cheap, must not wait,
 * and keep working after the cache is closed (they then report the last values).
 *
 * <p>Names are metric names in dotted form ({@code kvcache.scrub.bytes}); a name that ends in
 * {@code .bytes} or {@code .seconds} counts that unit. Tags are pairs of a name and a value.
 */
public interface TierVisitor {

  /**
   * Reads that {@code tier} served, as the stack above it counted them (a stack's own reads of a
   * tier, such as uploads, are not among them).
   */
  void hits(String tier, LongSupplier reads);

  /** The bytes {@code tier} holds (blocks, and memory reserved for writes under way) and may hold. */
  void bytes(String tier, LongSupplier used, LongSupplier capacity);

  /** A count of the tier's own that only grows. */
  void counter(String name, String help, DoubleSupplier value, String... tags);

  /** A value of the tier's own that goes up and down. */
  void gauge(String name, String help, DoubleSupplier value, String... tags);
}
