package dev.kvcache.spi;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;

/**
 * How fast a tier hands out its blocks, learnt from the reads it times: a per-block latency and a
 * throughput, fitted to the recent reads as moving averages, so that a lookup can say how long
 * loading the blocks it found should take.
 *
 * <p>Each {@link #record} is one block's read: its bytes and the nanoseconds it took. The rate
 * keeps exponentially weighted means of the sizes, the times and their products ({@value #WEIGHT}
 * weight on the newest read, so the last few dozen reads count), and fits {@code time = latency +
 * bytes / throughput} to them. When the reads are all about the same size the fit has nothing to
 * tell latency from throughput with, and the rate takes the whole time as proportional to the
 * bytes, which is exact for reads of that size.
 *
 * <p>Thread-safe. A read that finds another thread recording skips its sample rather than wait,
 * so recording never slows the reads it times.
 */
public final class LoadRate {

  /** The weight of the newest read in the moving averages. */
  public static final double WEIGHT = 0.1;

  private final ReentrantLock lock = new ReentrantLock();
  private long samples; // guarded by lock
  private double meanBytes; // guarded by lock
  private double meanNanos; // guarded by lock
  private double meanBytesSquared; // guarded by lock
  private double meanBytesNanos; // guarded by lock
  private volatile Fit fit; // null until the first read

  /** The fitted model: nanoseconds per block plus nanoseconds per byte, and the mean block size. */
  private record Fit(double latencyNanos, double nanosPerByte, double meanBytes) {}

  /**
   * Counts one block read of {@code bytes} bytes that took {@code nanos} nanoseconds. Reads of no
   * bytes or no time are ignored.
   */
  public void record(long bytes, long nanos) {
    if (bytes <= 0 || nanos <= 0 || !lock.tryLock()) {
      return;
    }
    try {
      double x = bytes;
      double y = nanos;
      double w = samples == 0 ? 1.0 : WEIGHT;
      samples++;
      meanBytes += w * (x - meanBytes);
      meanNanos += w * (y - meanNanos);
      meanBytesSquared += w * (x * x - meanBytesSquared);
      meanBytesNanos += w * (x * y - meanBytesNanos);
      fit = fit();
    } finally {
      lock.unlock();
    }
  }

  private Fit fit() {
    double variance = meanBytesSquared - meanBytes * meanBytes;
    if (variance > 0.01 * meanBytes * meanBytes) { // sizes spread by more than 10%
      double slope = (meanBytesNanos - meanBytes * meanNanos) / variance;
      double intercept = meanNanos - slope * meanBytes;
      if (slope > 0 && intercept >= 0) {
        return new Fit(intercept, slope, meanBytes);
      }
    }
    return new Fit(0, meanNanos / meanBytes, meanBytes);
  }

  /** Whether any read has been recorded; until then there is no estimate. */
  public boolean measured() {
    return fit != null;
  }

  /**
   * The estimated time to read {@code blocks} blocks of {@code bytes} bytes in all, one after
   * another; empty if no read has been recorded. With {@code bytes} negative (not known), the
   * blocks are taken to be of the mean size of the reads recorded.
   */
  public Optional<Duration> estimate(int blocks, long bytes) {
    Fit f = fit;
    if (blocks <= 0) {
      return Optional.of(Duration.ZERO);
    }
    if (f == null) {
      return Optional.empty();
    }
    double total = bytes < 0 ? blocks * f.meanBytes() : bytes;
    double nanos = blocks * f.latencyNanos() + total * f.nanosPerByte();
    return Optional.of(Duration.ofNanos(Math.round(nanos)));
  }

  /** The fitted time per block read beyond its bytes, in nanoseconds; 0 if not measured. */
  public double latencyNanos() {
    Fit f = fit;
    return f == null ? 0 : f.latencyNanos();
  }

  /** The fitted throughput in bytes per second; 0 if not measured. */
  public double bytesPerSecond() {
    Fit f = fit;
    return f == null ? 0 : 1e9 / f.nanosPerByte();
  }
}
