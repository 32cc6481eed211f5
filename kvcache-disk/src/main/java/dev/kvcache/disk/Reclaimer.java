package dev.kvcache.disk;

import dev.kvcache.disk.internal.RateLimiter;
import java.util.concurrent.TimeUnit;
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
final class Reclaimer extends BackgroundWork {

  private static final Logger log = LoggerFactory.getLogger(Reclaimer.class);

  private final DiskTier tier;
  private final RateLimiter limiter;
  private volatile boolean woken;

  Reclaimer(DiskTier tier, long bytesPerSecond) {
    super("kvcache-disk-reclaim", TimeUnit.MILLISECONDS.toNanos(100));
    this.tier = tier;
    this.limiter = new RateLimiter(bytesPerSecond);
  }

  /** Looks for work now rather than at the next idle tick. */
  void wake() {
    woken = true;
    unpark();
  }

  @Override
  public void run() {
    while (!stopped()) {
      boolean worked;
      if (!woken) {
        idle();
        continue;
      }
      try {
        worked = tier.reclaimOnce(limiter, this::stopped);
      } catch (Exception e) {
        if (!stopped()) {
          log.warn("reclaiming space in {} failed: {}", tier.directory(), e.toString());
        }
        worked = false;
      }
      if (!worked && !stopped()) {
        idle();
      }
    }
  }
}
