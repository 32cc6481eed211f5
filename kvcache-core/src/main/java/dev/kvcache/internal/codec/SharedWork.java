package dev.kvcache.internal.codec;

import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntConsumer;

/**
 * Runs numbered work items on the calling thread and on helper tasks that take items from a
 * shared counter.
 *
 * <p>The caller works too and waits only for items that a helper has already taken, never for a
 * helper task to start: a helper that starts late finds nothing left and returns. So the call
 * cannot deadlock when it runs on a thread of the executor's own pool, and an executor that
 * rejects or delays tasks only makes it slower. Items write into the caller's buffers, so the call
 * returns only when every taken item has finished, even if the caller is interrupted (the
 * interrupt is kept).
 */
public final class SharedWork {

  private SharedWork() {}

  /**
   * Runs {@code item} for 0..{@code count - 1}, with up to {@code helpers} tasks on {@code
   * executor} beside the calling thread; rethrows the first unchecked failure after all items are
   * done (items after a failure are skipped).
   */
  public static void run(Executor executor, int helpers, int count, IntConsumer item) {
    if (count <= 0) {
      return;
    }
    AtomicInteger next = new AtomicInteger();
    AtomicInteger finished = new AtomicInteger();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Object allDone = new Object();
    Runnable worker =
        () -> {
          for (int i = next.getAndIncrement(); i < count; i = next.getAndIncrement()) {
            try {
              if (failure.get() == null) {
                item.accept(i);
              }
            } catch (RuntimeException | Error e) {
              failure.compareAndSet(null, e);
            } finally {
              if (finished.incrementAndGet() == count) {
                synchronized (allDone) {
                  allDone.notifyAll();
                }
              }
            }
          }
        };
    for (int h = 0; h < Math.min(helpers, count - 1); h++) {
      try {
        executor.execute(worker);
      } catch (RejectedExecutionException e) {
        break; // the calling thread does the rest
      }
    }
    worker.run();
    boolean interrupted = false;
    synchronized (allDone) {
      while (finished.get() < count) {
        try {
          allDone.wait();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    Throwable e = failure.get();
    if (e instanceof RuntimeException) {
      throw (RuntimeException) e;
    }
    if (e instanceof Error) {
      throw (Error) e;
    }
  }
}
