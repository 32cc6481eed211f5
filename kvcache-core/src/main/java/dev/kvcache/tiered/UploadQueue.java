package dev.kvcache.tiered;

import dev.kvcache.BlockKey;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keys waiting for upload, oldest first, and the threads that upload them. A key is queued once
 * however often it is offered, and never uploaded by two threads at once: a key offered again
 * while its upload runs waits for it to end. A key whose upload failed may wait out a delay
 * before it is queued again ({@link #retryLater}).
 */
final class UploadQueue {

  private static final Logger log = LoggerFactory.getLogger(UploadQueue.class);

  private final int capacity;
  private final Consumer<BlockKey> upload;
  private final LinkedHashSet<BlockKey> queued = new LinkedHashSet<>();
  private final Set<BlockKey> running = new HashSet<>();
  /** Keys to queue again once {@code System.nanoTime()} reaches their value. */
  private final HashMap<BlockKey, Long> delayed = new HashMap<>();
  private final List<Thread> threads = new ArrayList<>();
  private final LongAdder drops = new LongAdder();
  private boolean closing;

  UploadQueue(int capacity, int threadCount, String name, Consumer<BlockKey> upload) {
    this.capacity = capacity;
    this.upload = upload;
    for (int i = 0; i < threadCount; i++) {
      Thread t = new Thread(this::run, "kvcache-upload-" + name + "-" + i);
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }
  }

  /**
   * Queues a key (at once, if it waited out a retry's delay); false (a drop, counted) if the queue
   * is full or closing.
   */
  synchronized boolean offer(BlockKey key) {
    if (queued.contains(key)) {
      return true;
    }
    if (delayed.remove(key) != null) {
      queued.add(key); // its room was counted while it waited
      notifyAll();
      return true;
    }
    if (closing || queued.size() + delayed.size() >= capacity) {
      drops.increment();
      return false;
    }
    queued.add(key);
    notifyAll();
    return true;
  }

  /**
   * Queues a key again after {@code delayNanos}, from the thread whose upload of it failed; false
   * (a drop, counted) if the queue is full or closing. An offer of the key meanwhile queues it at
   * once.
   */
  synchronized boolean retryLater(BlockKey key, long delayNanos) {
    if (queued.contains(key)) {
      return true; // offered again while its upload ran
    }
    if (closing || queued.size() + delayed.size() >= capacity) {
      drops.increment();
      return false;
    }
    delayed.put(key, System.nanoTime() + delayNanos);
    notifyAll();
    return true;
  }

  /**
   * Takes the key out of the queue, and waits for an upload of it under way to end; a retry that
   * upload asked for is cancelled too.
   */
  synchronized void cancel(BlockKey key) throws InterruptedException {
    queued.remove(key);
    delayed.remove(key);
    while (running.contains(key)) {
      wait();
    }
    delayed.remove(key);
  }

  /** Counts a queued key that was not uploaded after all. */
  void dropped() {
    drops.increment();
  }

  long drops() {
    return drops.sum();
  }

  /** Keys queued, being uploaded or waiting to be tried again. */
  synchronized long waiting() {
    return queued.size() + running.size() + delayed.size();
  }

  /**
   * Waits until nothing is queued, running or waiting to be tried again, up to {@code millis};
   * whether that is so.
   */
  synchronized boolean awaitIdle(long millis) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    while (!queued.isEmpty() || !running.isEmpty() || !delayed.isEmpty()) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return false;
      }
      TimeUnit.NANOSECONDS.timedWait(this, left);
    }
    return true;
  }

  private void run() {
    while (true) {
      BlockKey key;
      synchronized (this) {
        key = null;
        while (key == null) {
          key = next();
          if (key == null) {
            if (closing) {
              return;
            }
            try {
              long untilDue = untilFirstDue();
              if (untilDue == Long.MAX_VALUE) {
                wait();
              } else {
                TimeUnit.NANOSECONDS.timedWait(this, untilDue);
              }
            } catch (InterruptedException e) {
              return;
            }
          }
        }
        running.add(key);
      }
      try {
        upload.accept(key);
      } catch (RuntimeException e) {
        log.warn("uploading block {} failed", key, e);
      } finally {
        synchronized (this) {
          running.remove(key);
          notifyAll();
        }
      }
    }
  }

  /**
   * The oldest queued key not being uploaded, taken out of the queue, after the keys whose delay
   * is over joined it; null if none.
   */
  private BlockKey next() {
    if (!delayed.isEmpty()) {
      long now = System.nanoTime();
      for (Iterator<Map.Entry<BlockKey, Long>> it = delayed.entrySet().iterator();
          it.hasNext(); ) {
        Map.Entry<BlockKey, Long> e = it.next();
        if (now - e.getValue() >= 0) {
          it.remove();
          queued.add(e.getKey());
        }
      }
    }
    for (Iterator<BlockKey> it = queued.iterator(); it.hasNext(); ) {
      BlockKey key = it.next();
      if (!running.contains(key)) {
        it.remove();
        return key;
      }
    }
    return null;
  }

  /** Nanoseconds until the first delayed key is due (at least 1); Long.MAX_VALUE if none. */
  private long untilFirstDue() {
    long now = System.nanoTime();
    long first = Long.MAX_VALUE;
    for (long due : delayed.values()) {
      first = Math.min(first, Math.max(1, due - now));
    }
    return first;
  }

  /**
   * Lets the queued uploads (and those waiting to be tried again) run for up to {@code
   * waitMillis}, then stops the threads; what is left is dropped.
   */
  void close(long waitMillis) {
    try {
      if (!awaitIdle(waitMillis)) {
        synchronized (this) {
          log.warn("{} blocks were not uploaded before close",
              queued.size() + running.size() + delayed.size());
          drops.add(queued.size() + delayed.size());
          queued.clear();
          delayed.clear();
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    synchronized (this) {
      closing = true;
      notifyAll();
    }
    for (Thread t : threads) {
      try {
        t.join(TimeUnit.SECONDS.toMillis(10));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }
}
