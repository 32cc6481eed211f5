package dev.kvcache.server.local;

import io.micronaut.context.annotation.Value;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;

/**
 * The threads that copy the blocks of one copy-into request at once ({@code
 * kvcache.copy-threads}): a copy with its checksum runs at the speed of one core's memory
 * bandwidth, and a request of many blocks is split into runs of consecutive blocks, one per
 * thread, the request's own thread taking the first.
 */
@Singleton
public class CopyThreads {

  private final int threads;
  private final ExecutorService helpers;

  CopyThreads(@Value("${kvcache.copy-threads:2}") int threads) {
    if (threads < 1 || threads > 64) {
      throw new IllegalArgumentException("kvcache.copy-threads must be 1 to 64, got " + threads);
    }
    this.threads = threads;
    AtomicInteger n = new AtomicInteger();
    this.helpers = threads == 1 ? null : Executors.newFixedThreadPool(threads - 1, r -> {
      Thread t = new Thread(r, "kvcache-copy-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * {@code copy} of each index from 0 to {@code count - 1}, in runs on the copy threads; returns
   * each result in index order. The first exception a run throws is thrown once every run has
   * ended, so that no copy still writes when the caller lets go of the memory it writes.
   */
  public <T> List<T> copyAll(int count, IntFunction<T> copy) {
    int runs = Math.max(1, Math.min(threads, count));
    Object[] out = new Object[count];
    List<Future<?>> others = new ArrayList<>(runs);
    for (int r = 1; r < runs; r++) {
      int from = (int) ((long) count * r / runs);
      int to = (int) ((long) count * (r + 1) / runs);
      others.add(helpers.submit(() -> run(copy, out, from, to)));
    }
    RuntimeException failed = null;
    try {
      run(copy, out, 0, count / runs);
    } catch (RuntimeException e) {
      failed = e;
    }
    boolean interrupted = false;
    for (Future<?> f : others) {
      while (true) {
        try {
          f.get();
          break;
        } catch (InterruptedException e) {
          interrupted = true; // wait on: a run still writing must end first
        } catch (ExecutionException e) {
          if (failed == null) {
            failed = e.getCause() instanceof RuntimeException re ? re
                : new IllegalStateException(e.getCause());
          }
          break;
        }
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    if (failed != null) {
      throw failed;
    }
    @SuppressWarnings("unchecked")
    List<T> results = (List<T>) Arrays.asList(out);
    return results;
  }

  private static <T> void run(IntFunction<T> copy, Object[] out, int from, int to) {
    for (int i = from; i < to; i++) {
      out[i] = copy.apply(i);
    }
  }

  @PreDestroy
  void close() {
    if (helpers != null) {
      helpers.shutdownNow();
    }
  }
}
