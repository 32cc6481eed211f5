package dev.kvcache.s3.internal;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * Whether the object store answers, and the back-off while it does not. After a failed request
 * (unreachable, timed out, throttled, failing) the tier sends nothing for a pause that doubles with
 * each failure in a row, from {@link #FIRST_PAUSE} up to {@link #LONGEST_PAUSE}; meanwhile its
 * reads are misses and its writes are not stored. The first request after the pause is a probe:
 * its success ends the back-off.
 */
public final class StoreState {

  /** The pause after the first failure. */
  public static final Duration FIRST_PAUSE = Duration.ofMillis(200);
  /** The longest pause. */
  public static final Duration LONGEST_PAUSE = Duration.ofSeconds(30);

  private long pauseNanos;
  private long resumeAt;
  private int failuresInRow;
  private String lastError;
  private Instant failingSince;

  /** Whether a request may be sent now: no back-off, or its pause is over. */
  public synchronized boolean available() {
    return failuresInRow == 0 || System.nanoTime() - resumeAt >= 0;
  }

  /** A request succeeded: the store answers. */
  public synchronized void succeeded() {
    failuresInRow = 0;
    pauseNanos = 0;
    failingSince = null;
  }

  /** A request failed for a reason that is the store's (not a miss, not a refused condition). */
  public synchronized void failed(String why) {
    if (failuresInRow++ == 0) {
      failingSince = Instant.now();
      pauseNanos = FIRST_PAUSE.toNanos();
    } else {
      pauseNanos = Math.min(2 * pauseNanos, LONGEST_PAUSE.toNanos());
    }
    resumeAt = System.nanoTime() + pauseNanos;
    lastError = why;
  }

  /** What is wrong, for the tier's health; empty while the store answers. */
  public synchronized Optional<String> problem() {
    if (failuresInRow == 0) {
      return Optional.empty();
    }
    return Optional.of("the object store has failed " + failuresInRow + " request"
        + (failuresInRow == 1 ? "" : "s") + " in a row since " + failingSince
        + " (last: " + lastError + "); its blocks are misses and puts are not stored until it"
        + " answers again");
  }
}
