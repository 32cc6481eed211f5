package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockWriter;
import dev.kvcache.KvCache;
import dev.kvcache.ram.RamTier;
import dev.kvcache.ram.RamTierConfig;
import dev.kvcache.server.api.BodyWriter;
import dev.kvcache.testkit.Payloads;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * A body whose request goes away (its connection closed) while the cache is still opening its
 * writer on the blocking threads: the writer opened after the cancel is closed, and the room it
 * reserved is free again.
 */
class BodyWriterTest {

  private static final int LENGTH = 64 << 10;

  @Test
  void aWriterOpenedAfterItsRequestWasCancelledFreesItsRoom() throws Exception {
    Scheduler blocking = Schedulers.newBoundedElastic(2, 16, "body-writer-test");
    try (RamTier ram = new RamTier(RamTierConfig.ofCapacity(1L << 20))) {
      CountDownLatch opening = new CountDownLatch(1);
      CountDownLatch cancelled = new CountDownLatch(1);
      CountDownLatch opened = new CountDownLatch(1);
      KvCache cache = openingOnlyAfter(ram, opening, cancelled, opened);
      Sinks.Many<ByteBuf> body = Sinks.many().unicast().onBackpressureBuffer();
      Disposable put = BodyWriter.store(cache, Payloads.key(1), body.asFlux(), LENGTH, LENGTH,
          blocking, null, writer -> writer).subscribe(status -> { }, error -> { });
      assertThat(opening.await(10, TimeUnit.SECONDS)).as("the writer is being opened").isTrue();
      put.dispose(); // the connection closed
      cancelled.countDown(); // the writer is opened now, after the cancel
      body.tryEmitNext(Unpooled.wrappedBuffer(new byte[LENGTH]));
      assertThat(opened.await(10, TimeUnit.SECONDS)).as("the writer was opened").isTrue();
      long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      while (ram.stats().bytesUsed() != 0 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertThat(ram.stats().bytesUsed()).as("RAM reserved by a cancelled put").isZero();
      assertThat(ram.contains(Payloads.key(1))).isFalse();
    } finally {
      blocking.dispose();
    }
  }

  /**
   * A cache that never opens a writer at once ({@code tryWriter} is empty), and opens one in
   * {@code ram} only once {@code release} is counted down, after counting down {@code opening};
   * counts down {@code opened} once it is open.
   */
  private static KvCache openingOnlyAfter(RamTier ram, CountDownLatch opening,
      CountDownLatch release, CountDownLatch opened) {
    return (KvCache) Proxy.newProxyInstance(KvCache.class.getClassLoader(),
        new Class<?>[] {KvCache.class}, (proxy, method, args) -> {
          switch (method.getName()) {
            case "tryWriter":
              return Optional.empty();
            case "writer":
              opening.countDown();
              awaitUninterruptibly(release); // as a lock taken while opening would
              BlockWriter writer = ram.writer((BlockKey) args[0], (Integer) args[1]);
              assertThat(ram.stats().bytesUsed()).as("reserved by the writer").isPositive();
              opened.countDown();
              return writer;
            default:
              throw new UnsupportedOperationException(method.getName());
          }
        });
  }

  private static void awaitUninterruptibly(CountDownLatch latch) {
    boolean interrupted = false;
    while (true) {
      try {
        latch.await();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
