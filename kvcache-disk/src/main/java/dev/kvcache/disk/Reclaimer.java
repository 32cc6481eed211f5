package dev.kvcache.disk;

import dev.kvcache.disk.internal.RateLimiter;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The disk tier's background thread that keeps room ahead of the writers: it compacts
 * super-blocks that are mostly garbage and, past the high watermark, reclaims the oldest one,
 * rewriting forward the blocks read since they were written. Rewrites are paced by a {@link
 * RateLimiter}; reads never wait for it. It starts working at the first {@link #wake} (a writer
 * starting a super-block): a directory opened full is not reclaimed before a write needs room, so
 * that whoever opened the tier can first ask to be told of what it evicts.
 */
final class Reclaimer implements Runnable {

  private static final Logger log = LoggerFactory.getLogger(Reclaimer.class);
  private static final long IDLE_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  private final DiskTier tier;
  private final RateLimiter limiter;
  private final Thread thread;
  private volatile boolean stopped;
  private volatile boolean woken;

  Reclaimer(DiskTier tier, long bytesPerSecond) {
    this.tier = tier;
    this.limiter = new RateLimiter(bytesPerSecond);
    this.thread = new Thread(this, "kvcache-disk-reclaim");
    this.thread.setDaemon(true);
  }

  void start() {
    thread.start();
  }

  /** Looks for work now rather than at the next idle tick. */
  void wake() {
    woken = true;
    LockSupport.unpark(thread);
  }

  void stop() {
    stopped = true;
    LockSupport.unpark(thread);
    try {
      thread.join(TimeUnit.SECONDS.toMillis(10));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void run() {
    while (!stopped) {
      boolean worked;
      if (!woken) {
        LockSupport.parkNanos(IDLE_NANOS);
        continue;
      }
      try {
        worked = tier.reclaimOnce(limiter, () -> stopped);
      } catch (Exception e) {
        if (!stopped) {
          log.warn("reclaiming space in {} failed: {}", tier.directory(), e.toString());
        }
        worked = false;
      }
      if (!worked && !stopped) {
        LockSupport.parkNanos(IDLE_NANOS);
      }
    }
  }
}
