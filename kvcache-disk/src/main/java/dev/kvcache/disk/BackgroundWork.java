package dev.kvcache.disk;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Work the disk tier does on a daemon thread of its own until it is stopped: the {@link
 * Reclaimer} and the {@link Scrubber}. {@link #stop} wakes the thread and waits up to 10 s for it
 * to end; the work checks {@link #stopped} between steps.
 */
abstract class BackgroundWork implements Runnable {

  private final Thread thread;
  private final long idleNanos;
  private volatile boolean stopped;

  /**
   * @param name the thread's name
   * @param idleNanos how long {@link #idle} waits
   */
  BackgroundWork(String name, long idleNanos) {
    this.thread = new Thread(this, name);
    this.thread.setDaemon(true);
    this.idleNanos = idleNanos;
  }

  final void start() {
    thread.start();
  }

  final void stop() {
    stopped = true;
    LockSupport.unpark(thread);
    try {
      thread.join(TimeUnit.SECONDS.toMillis(10));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Whether {@link #stop} was called. */
  final boolean stopped() {
    return stopped;
  }

  /** Waits the idle time, or until {@link #unpark} or {@link #stop}. */
  final void idle() {
    LockSupport.parkNanos(idleNanos);
  }

  /** Ends the thread's {@link #idle} now. */
  final void unpark() {
    LockSupport.unpark(thread);
  }
}
