package dev.kvcache.server.events;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * Publishes {@link KvEvent}s as vLLM's {@code ZmqEventPublisher} does, so that a router that reads
 * an engine's events reads these: a PUB socket sends each batch as three frames, the topic, its
 * sequence number (8 bytes, big-endian, from 0) and the batch ({@link KvEventEncoder}); a ROUTER
 * socket answers a subscriber that asks for the batches from a sequence number on (frames: an empty
 * one and the number) with each batch still kept, as {@code [empty, topic, seq, batch]}, then
 * {@code [empty, empty, 0xFF x 8, empty]}.
 *
 * <p>{@link #offer} never waits: events go to a bounded queue that one thread drains every {@code
 * interval}, in batches of up to {@value #MAX_BATCH_EVENTS}, answering the replay requests waiting
 * as it goes. Events that find the queue full are dropped, and
 * the next batch's sequence number skips one, so that a subscriber sees a gap and knows it missed
 * some; a subscriber that reads too slowly loses batches at the PUB socket's high-water mark, and
 * sees a gap too.
 */
public final class KvEventPublisher implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(KvEventPublisher.class);
  private static final byte[] END_SEQ = {-1, -1, -1, -1, -1, -1, -1, -1};
  private static final byte[] EMPTY = new byte[0];
  /** The most events one batch carries. */
  static final int MAX_BATCH_EVENTS = 1024;

  private final ArrayBlockingQueue<Queued> queue;
  private final ArrayDeque<Kept> kept = new ArrayDeque<>();
  private final int keptBatches;
  private final long intervalMillis;
  private final ZContext context = new ZContext(1);
  private final ZMQ.Socket pub;
  private final ZMQ.Socket replay;
  private final Thread thread;
  private final AtomicLong nextSequence = new AtomicLong();
  private final LongAdder dropped = new LongAdder();
  private final LongAdder batches = new LongAdder();
  private final LongAdder bytes = new LongAdder();
  private final LongAdder replays = new LongAdder();
  private volatile boolean running = true;
  /** Events dropped since the last batch went out: the next one's number skips one. */
  private final AtomicLong droppedSinceBatch = new AtomicLong();

  /** A batch kept for replay. */
  private record Kept(byte[] topic, long sequence, byte[] batch) {}

  /** An event and its topic, waiting for a batch. */
  private record Queued(String topic, KvEvent event) {}

  /**
   * Binds the sockets and starts the publishing thread.
   *
   * @param endpoint where the PUB socket binds, such as {@code tcp://*:5557} ({@code
   *     tcp://127.0.0.1:*} for any free port: {@link #endpoint()} says which)
   * @param replayEndpoint where the ROUTER socket for replays binds, or null for none
   * @param queueEvents events that may wait for the thread
   * @param keptBatches batches kept for replay
   * @param highWaterMark batches the PUB socket holds for a subscriber that reads slowly
   * @param interval how long events may wait to be sent in a batch
   * @throws IllegalArgumentException if an endpoint cannot be bound (in use, malformed), or both are
   *     the same
   */
  public KvEventPublisher(String endpoint, String replayEndpoint, int queueEvents,
      int keptBatches, int highWaterMark, Duration interval) {
    if (endpoint.equals(replayEndpoint) && !endpoint.endsWith(":*")) {
      throw new IllegalArgumentException("the KV events and their replays need two endpoints, got "
          + endpoint + " for both");
    }
    this.queue = new ArrayBlockingQueue<>(queueEvents);
    this.keptBatches = keptBatches;
    this.intervalMillis = Math.max(1, interval.toMillis());
    try {
      pub = context.createSocket(SocketType.PUB);
      pub.setSndHWM(highWaterMark);
      pub.setLinger(0);
      bind(pub, endpoint);
      if (replayEndpoint != null) {
        replay = context.createSocket(SocketType.ROUTER);
        replay.setLinger(0);
        bind(replay, replayEndpoint);
      } else {
        replay = null;
      }
    } catch (RuntimeException e) {
      context.close();
      throw new IllegalArgumentException("cannot bind the KV events' sockets (" + endpoint
          + (replayEndpoint == null ? "" : ", " + replayEndpoint) + "): " + e.getMessage(), e);
    }
    thread = new Thread(this::run, "kvcache-kv-events");
    thread.setDaemon(true);
    thread.start();
  }

  /** Binds {@code socket}, or says why it cannot. */
  private static void bind(ZMQ.Socket socket, String endpoint) {
    if (!socket.bind(endpoint)) {
      throw new IllegalStateException("error " + socket.errno() + " binding " + endpoint);
    }
  }

  /** Where the PUB socket listens, its port resolved if the endpoint asked for any ({@code *}). */
  public String endpoint() {
    return pub.getLastEndpoint();
  }

  /** Where the replay socket listens, its port resolved; null without one. */
  public String replayEndpoint() {
    return replay == null ? null : replay.getLastEndpoint();
  }

  /**
   * Queues an event for the next batch of {@code topic}; never waits.
   *
   * @param topic the batch's topic, as vLLM's {@code kv@<pod>@<model>}
   * @return false if the queue was full and the event is dropped
   */
  public boolean offer(String topic, KvEvent event) {
    if (queue.offer(new Queued(Objects.requireNonNull(topic, "topic"),
        Objects.requireNonNull(event, "event")))) {
      return true;
    }
    dropped.increment();
    droppedSinceBatch.incrementAndGet();
    return false;
  }

  /** Events dropped because the queue was full. */
  public long dropped() {
    return dropped.sum();
  }

  /** Batches sent. */
  public long batches() {
    return batches.sum();
  }

  /** Replay requests answered. */
  public long replays() {
    return replays.sum();
  }

  /** Bytes of the batches sent. */
  public long bytes() {
    return bytes.sum();
  }

  private void run() {
    List<Queued> batch = new ArrayList<>(MAX_BATCH_EVENTS);
    try {
      while (running || !queue.isEmpty()) {
        Thread.sleep(intervalMillis);
        if (replay != null) {
          while (answerReplay()) {
            // every request waiting
          }
        }
        while (queue.drainTo(batch, MAX_BATCH_EVENTS) > 0) {
          sendByTopic(batch);
          batch.clear();
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      if (running) {
        log.error("KV events stopped: {}", e.toString(), e);
      }
    }
  }

  /**
   * Sends the events as one batch for each run of them with one topic (encoded here, once a run,
   * rather than on the threads that offer them).
   */
  private void sendByTopic(List<Queued> queued) {
    List<KvEvent> events = new ArrayList<>(queued.size());
    String topic = queued.get(0).topic();
    for (Queued q : queued) {
      if (!q.topic().equals(topic)) {
        send(topic.getBytes(StandardCharsets.UTF_8), events);
        events.clear();
        topic = q.topic();
      }
      events.add(q.event());
    }
    send(topic.getBytes(StandardCharsets.UTF_8), events);
  }

  private void send(byte[] topic, List<KvEvent> events) {
    if (droppedSinceBatch.getAndSet(0) > 0) {
      nextSequence.incrementAndGet(); // the gap that tells a subscriber events were lost
    }
    long seq = nextSequence.getAndIncrement();
    byte[] payload = KvEventEncoder.encode(System.currentTimeMillis() / 1000.0, events, 0);
    pub.sendMore(topic);
    pub.sendMore(sequence(seq));
    pub.send(payload);
    batches.increment();
    bytes.add(payload.length);
    if (replay != null) {
      kept.addLast(new Kept(topic, seq, payload));
      if (kept.size() > keptBatches) {
        kept.removeFirst();
      }
    }
  }

  /**
   * Answers one replay request, if one waits: the kept batches from its sequence number on, then
   * the end.
   *
   * @return whether one was answered
   */
  private boolean answerReplay() {
    byte[] identity = replay.recv(ZMQ.DONTWAIT);
    if (identity == null) {
      return false;
    }
    List<byte[]> frames = new ArrayList<>();
    while (replay.hasReceiveMore()) {
      frames.add(replay.recv());
    }
    byte[] start = frames.isEmpty() ? EMPTY : frames.get(frames.size() - 1);
    if (start.length == 8) {
      long from = ByteBuffer.wrap(start).getLong();
      for (Kept k : kept) {
        if (k.sequence() >= from) {
          replay.sendMore(identity);
          replay.sendMore(EMPTY);
          replay.sendMore(k.topic());
          replay.sendMore(sequence(k.sequence()));
          replay.send(k.batch());
        }
      }
    }
    replay.sendMore(identity);
    replay.sendMore(EMPTY);
    replay.sendMore(EMPTY);
    replay.sendMore(END_SEQ);
    replay.send(EMPTY);
    replays.increment();
    return true;
  }

  private static byte[] sequence(long seq) {
    return ByteBuffer.allocate(8).putLong(seq).array();
  }

  /** Sends what is queued, then closes the sockets. */
  @Override
  public void close() {
    running = false;
    try {
      thread.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    context.close();
  }
}
