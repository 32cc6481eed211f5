package dev.kvcache.server.api;

import dev.kvcache.KvCache;
import io.micronaut.http.HttpResponse;
import io.micronaut.scheduling.TaskExecutors;
import io.netty.util.ReferenceCountUtil;
import jakarta.inject.Named;
import jakarta.inject.Singleton;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicBoolean;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Answers to reads built on the blocking threads when the cache's reads may wait for a device or
 * the network ({@link KvCache#readsMayWait}): a block below RAM is read (from the disk's page
 * cache or the device, or downloaded from an object store) and promoted into RAM there, not on the
 * event loop, where the wait would stall every connection that loop serves. A RAM-only cache's
 * answers are built where the request arrived, and so is a single block RAM holds ({@link
 * KvCache#tryGet}): the hop to another thread and back costs tens of microseconds, a fair part of
 * a small block's GET.
 *
 * <p>An answer built after its request went away (the connection closed during the read) has its
 * body released, and with it the leases it holds: {@code Mono.using} lets go of what it made on
 * every end, a cancel included, where a value {@code Mono.fromCallable(..).subscribeOn(..)}
 * produces after a cancel is dropped without a discard.
 */
@Singleton
public class OffLoop {

  private final KvCache cache;
  private final Scheduler blocking;

  OffLoop(KvCache cache, @Named(TaskExecutors.BLOCKING) ExecutorService blockingExecutor) {
    this.cache = cache;
    this.blocking = Schedulers.fromExecutorService(blockingExecutor);
  }

  /** The server's blocking executor, as a scheduler for work that must not run on a loop. */
  public Scheduler scheduler() {
    return blocking;
  }

  /**
   * {@code build}'s answer: built here if the cache's reads never wait, on a blocking thread if
   * they may.
   */
  public <R extends HttpResponse<?>> Mono<R> answer(Callable<R> build) {
    return cache.readsMayWait() ? onBlocking(build) : Mono.fromCallable(build);
  }

  /** {@code build}'s answer, built on a blocking thread. */
  <R extends HttpResponse<?>> Mono<R> onBlocking(Callable<R> build) {
    AtomicBoolean handedOn = new AtomicBoolean();
    return Mono.using(build,
            answer -> Mono.just(answer).doOnNext(a -> handedOn.set(true)),
            answer -> {
              if (!handedOn.get()) {
                answer.getBody().ifPresent(ReferenceCountUtil::safeRelease);
              }
            })
        .subscribeOn(blocking);
  }
}
