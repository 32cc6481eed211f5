package dev.kvcache.server.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class CopyThreadsTest {

  @Test
  void everyIndexIsCopiedOnceAndAnsweredInOrder() {
    for (int threads = 1; threads <= 3; threads++) {
      CopyThreads copies = new CopyThreads(threads);
      try {
        for (int count = 0; count <= 9; count++) {
          AtomicInteger calls = new AtomicInteger();
          List<Integer> got = copies.copyAll(count, i -> {
            calls.incrementAndGet();
            return i * 10;
          });
          assertThat(got).containsExactlyElementsOf(
              IntStream.range(0, count).map(i -> i * 10).boxed().toList());
          assertThat(calls).hasValue(count);
        }
      } finally {
        copies.close();
      }
    }
  }

  @Test
  void aRequestOfSeveralBlocksRunsOnAsManyThreadsAtOnce() throws Exception {
    CopyThreads copies = new CopyThreads(2);
    try {
      CountDownLatch both = new CountDownLatch(2);
      Set<String> threads = ConcurrentHashMap.newKeySet();
      List<Boolean> met = copies.copyAll(2, i -> {
        threads.add(Thread.currentThread().getName());
        both.countDown();
        try {
          return both.await(10, TimeUnit.SECONDS); // each waits for the other: both run at once
        } catch (InterruptedException e) {
          throw new IllegalStateException(e);
        }
      });
      assertThat(met).containsExactly(true, true);
      assertThat(threads).hasSize(2).contains(Thread.currentThread().getName());
    } finally {
      copies.close();
    }
  }

  @Test
  void aFailureIsThrownOnlyOnceEveryRunHasEnded() {
    CopyThreads copies = new CopyThreads(2);
    try {
      AtomicInteger finished = new AtomicInteger();
      assertThatThrownBy(() -> copies.copyAll(4, i -> {
        if (i == 0) {
          throw new IllegalStateException("block 0 failed");
        }
        try {
          Thread.sleep(200); // the other run is still copying when the first one fails
        } catch (InterruptedException e) {
          throw new IllegalStateException(e);
        }
        return finished.incrementAndGet();
      })).isInstanceOf(IllegalStateException.class).hasMessage("block 0 failed");
      assertThat(finished).hasValue(2); // blocks 2 and 3, on the other thread, ran to the end
    } finally {
      copies.close();
    }
  }

  @Test
  void aCountOutOfRangeIsRefusedNamingTheSetting() {
    assertThatThrownBy(() -> new CopyThreads(0)).hasMessageContaining("kvcache.copy-threads");
    assertThatThrownBy(() -> new CopyThreads(65)).hasMessageContaining("kvcache.copy-threads");
  }
}
