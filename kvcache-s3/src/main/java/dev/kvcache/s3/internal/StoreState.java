package dev.kvcache.s3.internal;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.LongSupplier;

/**
 * Whether the object store answers, and the back-off while it does not.
 *
 * <p>After {@value #FAILURES_TO_PAUSE} failed requests in a row (unreachable, timed out, throttled
 * after the client's own retries, failing) the tier sends nothing for a pause; meanwhile its
 * reads are misses and its writes are not stored. A failure now and then, between successes, is
 * the request's miss alone: a store that throttles a tenth of the requests fails about one in a
 * thousand after the client's retries, and pausing the tier for each would cost far more hits
 * than the failures themselves. When the pause is
 * over, one request goes through as a probe ({@link #available} lets one caller through, the
 * others wait for its answer): its success ends the back-off, its failure starts a pause twice as
 * long, from {@link #FIRST_PAUSE} up to {@link #LONGEST_PAUSE}, each drawn with jitter between half
 * and all of that length, so that the servers of a fleet do not probe a throttling store in step.
 *
 * <p>A burst of failures costs one pause: requests that were already under way when a pause began
 * fail as part of the burst that began it (a store throttling eight requests at once answers all
 * eight), and only the failure of a request sent after the pause began, the probe, lengthens the
 * back-off. A probe that never reports (its caller sent nothing after all) is given up after
 * {@code probeTimeout}, and the next caller probes instead.
 */
public final class StoreState {

  /** Failed requests in a row, with no success between, that begin the first pause. */
  public static final int FAILURES_TO_PAUSE = 3;
  /** The first pause, before jitter. */
  public static final Duration FIRST_PAUSE = Duration.ofMillis(200);
  /**
   * The longest pause, before jitter: a store that comes back is used again within it. Each pause
   * costs the store one probe, so a short one costs a store that stays down nothing worth saving.
   */
  public static final Duration LONGEST_PAUSE = Duration.ofSeconds(1);

  private final LongSupplier clock;
  private final long probeTimeoutNanos;
  private boolean backingOff;
  /** Pauses in a row: the next one is FIRST_PAUSE · 2^pausesInRow, bounded. */
  private int pausesInRow;
  private long pausedAt;
  private long resumeAt;
  private boolean probing;
  private long probeSentAt;
  private long failuresInRow;
  private long pauses;
  private String lastError;
  private Instant failingSince;

  /** @param probeTimeout how long a probe may go without reporting: the request time-out's bound */
  public StoreState(Duration probeTimeout) {
    this(probeTimeout, System::nanoTime);
  }

  /** As {@link #StoreState(Duration)}, on a clock of the caller's ({@link System#nanoTime} units). */
  StoreState(Duration probeTimeout, LongSupplier clock) {
    this.probeTimeoutNanos = probeTimeout.toNanos();
    this.clock = clock;
  }

  /**
   * Whether a request may be sent now: no back-off, or its pause is over and no other probe is
   * under way (the caller's request is then the probe, and must report with {@link #succeeded}
   * or {@link #failed}).
   *
   * @param sentNanos the time the request's failure will be reported with ({@link #failed}),
   *     read before this call: a request let through before a pause began then fails as part of
   *     its burst however long its caller took to send it, and a request stamped before the
   *     current pause is not let through as its probe (its failure would not count as the probe's)
   */
  public synchronized boolean available(long sentNanos) {
    if (!backingOff) {
      return true;
    }
    long now = clock.getAsLong();
    if (now - resumeAt < 0 || (probing && now - probeSentAt < probeTimeoutNanos)
        || sentNanos - pausedAt < 0) {
      return false;
    }
    probing = true;
    probeSentAt = sentNanos;
    return true;
  }

  /**
   * A request sent at {@code sentNanos} was given up on without an answer (a lookup out of its
   * budget): if it was the probe, the next caller probes.
   */
  public synchronized void abandoned(long sentNanos) {
    if (probing && sentNanos - probeSentAt >= 0) {
      probing = false;
    }
  }

  /** Whether the tier is backing off now: in a pause, or waiting for its probe. */
  public synchronized boolean paused() {
    return backingOff;
  }

  /** A request succeeded: the store answers. */
  public synchronized void succeeded() {
    backingOff = false;
    probing = false;
    pausesInRow = 0;
    failuresInRow = 0;
    failingSince = null;
  }

  /**
   * A request sent at {@code sentNanos} failed for a reason that is the store's (not a miss, not a
   * refused condition): a pause begins, unless the request was under way before the current one
   * began.
   */
  public synchronized void failed(String why, long sentNanos) {
    lastError = why;
    if (failuresInRow++ == 0) {
      failingSince = Instant.now();
    }
    if (backingOff ? sentNanos - pausedAt < 0 : failuresInRow < FAILURES_TO_PAUSE) {
      return; // part of the burst that began this pause, or too few failures yet to begin one
    }
    long now = clock.getAsLong();
    long full = FIRST_PAUSE.toNanos() << Math.min(pausesInRow, 20);
    full = Math.min(full, LONGEST_PAUSE.toNanos());
    long pause = full / 2 + ThreadLocalRandom.current().nextLong(full / 2 + 1);
    pausesInRow++;
    pauses++;
    backingOff = true;
    probing = false;
    pausedAt = now;
    resumeAt = now + pause;
  }

  /** The pauses begun so far: one per burst of failures, and one per failed probe. */
  public synchronized long pauses() {
    return pauses;
  }

  /** What is wrong, for the tier's health; empty while the store answers. */
  public synchronized Optional<String> problem() {
    if (!backingOff) {
      return Optional.empty();
    }
    return Optional.of("the object store has failed " + failuresInRow + " request"
        + (failuresInRow == 1 ? "" : "s") + " since " + failingSince + " (last: " + lastError
        + "); its blocks are misses and puts are not stored until it answers again");
  }
}
