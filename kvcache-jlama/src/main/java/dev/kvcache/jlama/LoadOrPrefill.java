package dev.kvcache.jlama;

import dev.kvcache.PrefixLocation;
import java.time.Duration;
import java.util.Optional;

/**
 * Decides whether the blocks a lookup found are loaded or computed again: a load takes the
 * cache's estimate of reading them ({@link PrefixLocation.Run#estimatedLoad()}) plus their copy
 * into the model's buffers at the speed of the loads measured so far; a prefill takes their tokens
 * at the speed of the prefills measured so far. Both speeds are moving averages of what this
 * engine did; until a prefill has been measured, or when the cache gives no estimate, the blocks
 * are loaded. Thread-safe.
 */
public final class LoadOrPrefill {

  private static final double WEIGHT = 0.1;

  private final boolean weighs;

  private double prefillTokensPerNano;
  private double loadBlocksPerNano;
  private long recomputed;

  private LoadOrPrefill(boolean weighs) {
    this.weighs = weighs;
  }

  /** Decisions from the measured speeds, as described above. */
  public static LoadOrPrefill measured() {
    return new LoadOrPrefill(true);
  }

  /** Found blocks always loaded, whatever the speeds (which are still measured). */
  public static LoadOrPrefill alwaysLoad() {
    return new LoadOrPrefill(false);
  }

  /** Tells of a prefill of {@code tokens} tokens that took {@code nanos}. */
  public synchronized void prefilled(int tokens, long nanos) {
    prefillTokensPerNano = average(prefillTokensPerNano, tokens, nanos);
  }

  /** Tells of a load of {@code blocks} blocks that took {@code nanos}, reads and copies. */
  public synchronized void loaded(int blocks, long nanos) {
    loadBlocksPerNano = average(loadBlocksPerNano, blocks, nanos);
  }

  private static double average(double current, int count, long nanos) {
    if (count <= 0 || nanos <= 0) {
      return current;
    }
    double rate = (double) count / nanos;
    return current == 0 ? rate : current + WEIGHT * (rate - current);
  }

  /**
   * How many of the blocks {@code location} found to load: all of them, or none when computing
   * their tokens is expected to be faster (then counted in {@link #recomputed()}).
   */
  public int toLoad(PrefixLocation location, int tokensPerBlock) {
    int found = location.blocks();
    if (found == 0 || !weighs || !prefillIsFaster(location, tokensPerBlock)) {
      return found;
    }
    synchronized (this) {
      recomputed += found;
    }
    return 0;
  }

  /**
   * Whether computing the tokens of the blocks {@code location} found is expected to be faster
   * than loading them; false when either time is unknown.
   */
  public boolean prefillIsFaster(PrefixLocation location, int tokensPerBlock) {
    Optional<Duration> estimate = location.estimatedLoad();
    double prefillRate;
    double loadRate;
    synchronized (this) {
      prefillRate = prefillTokensPerNano;
      loadRate = loadBlocksPerNano;
    }
    if (estimate.isEmpty() || prefillRate == 0) {
      return false;
    }
    int found = location.blocks();
    double load = estimate.get().toNanos() + (loadRate == 0 ? 0 : found / loadRate);
    double prefill = (double) found * tokensPerBlock / prefillRate;
    return load > prefill;
  }

  /** Blocks found but computed again, their load expected to be slower. */
  public synchronized long recomputed() {
    return recomputed;
  }

  /** The measured prefill speed, in tokens per second; 0 before the first prefill. */
  public synchronized double prefillTokensPerSecond() {
    return prefillTokensPerNano * 1e9;
  }
}
