package dev.kvcache.disk.internal;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/** Paces one thread to at most {@code bytesPerSecond}, sleeping when it gets ahead. */
public final class RateLimiter {

  private final double nanosPerByte;
  private long next = System.nanoTime();

  public RateLimiter(long bytesPerSecond) {
    if (bytesPerSecond < 1) {
      throw new IllegalArgumentException("bytesPerSecond must be positive, got " + bytesPerSecond);
    }
    this.nanosPerByte = 1e9 / bytesPerSecond;
  }

  /** Accounts for {@code bytes}, sleeping first if the budget so far is spent. */
  public void acquire(long bytes) {
    long now = System.nanoTime();
    // an idle limiter does not bank more than a second of credit
    next = Math.max(next, now - TimeUnit.SECONDS.toNanos(1));
    if (next > now) {
      LockSupport.parkNanos(next - now);
    }
    next += (long) (bytes * nanosPerByte);
  }
}
