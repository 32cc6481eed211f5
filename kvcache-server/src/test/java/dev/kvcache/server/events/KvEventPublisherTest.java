package dev.kvcache.server.events;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * The publisher speaks as vLLM's ZMQ publisher does, to a real ZMQ subscriber and replay client on
 * loopback: each batch three frames (topic, sequence number, vLLM's {@code KVEventBatch} in
 * MessagePack), numbered from 0 one by one; a replay answers the batches kept from the number asked
 * on, then its end marker; events dropped from a full queue leave a gap in the numbers.
 */
class KvEventPublisherTest {

  private static final String TOPIC = "kv@kvcache@llama-3.1-8b";
  private static final long BIG = 0xfedcba9876543210L; // above 2^63: written unsigned

  /** A batch as a subscriber reads it. */
  private record Received(String topic, long sequence, byte[] batch) {}

  private static Received receive(ZMQ.Socket sub) {
    byte[] topic = sub.recv();
    if (topic == null) {
      return null;
    }
    byte[] seq = sub.recv();
    byte[] batch = sub.recv();
    assertThat(sub.hasReceiveMore()).as("three frames").isFalse();
    return new Received(new String(topic, StandardCharsets.UTF_8), ByteBuffer.wrap(seq).getLong(),
        batch);
  }

  /** Offers {@code event} until the subscriber has joined and reads a batch of it. */
  private static Received firstBatch(KvEventPublisher publisher, ZMQ.Socket sub, KvEvent event) {
    for (int i = 0; i < 100; i++) {
      publisher.offer(TOPIC, event);
      Received r = receive(sub);
      if (r != null) {
        return r;
      }
    }
    throw new AssertionError("no batch reached the subscriber");
  }

  private static KvEvent.BlockStored stored(long first) {
    return new KvEvent.BlockStored(new long[] {first, BIG}, 7L, new int[] {1, 2, 3, 4, 5, 6, 7, 8},
        4, null, KvEvent.STORAGE);
  }

  @Test
  void batchesAreVllmsKvEventBatchesNumberedOneByOneAndAReplayGivesThemBack() throws Exception {
    try (ZContext client = new ZContext();
        KvEventPublisher publisher = new KvEventPublisher("tcp://127.0.0.1:*",
            "tcp://127.0.0.1:*", 1000, 100, 1000, Duration.ofMillis(5))) {
      ZMQ.Socket sub = ZmqClients.socket(client, SocketType.SUB, 200);
      sub.connect(publisher.endpoint());
      sub.subscribe("kv@".getBytes(StandardCharsets.UTF_8));

      Received first = firstBatch(publisher, sub, stored(1));
      assertThat(first.topic()).isEqualTo(TOPIC);
      List<Received> seen = new ArrayList<>(List.of(first));
      publisher.offer(TOPIC, new KvEvent.BlockRemoved(new long[] {1}, KvEvent.STORAGE));
      seen.add(receive(sub));
      publisher.offer(TOPIC, new KvEvent.AllBlocksCleared());
      seen.add(receive(sub));
      for (int i = 1; i < seen.size(); i++) {
        assertThat(seen.get(i).sequence()).isEqualTo(seen.get(i - 1).sequence() + 1);
      }

      MessageUnpacker batch = MessagePack.newDefaultUnpacker(first.batch());
      assertThat(batch.unpackArrayHeader()).as("[ts, events, rank]").isEqualTo(3);
      assertThat(batch.unpackDouble()).isCloseTo(System.currentTimeMillis() / 1000.0,
          org.assertj.core.data.Offset.offset(60.0));
      int events = batch.unpackArrayHeader();
      assertThat(events).isPositive();
      assertThat(batch.unpackMapHeader()).isEqualTo(8);
      assertThat(batch.unpackString()).isEqualTo("type");
      assertThat(batch.unpackString()).isEqualTo("BlockStored");
      assertThat(batch.unpackString()).isEqualTo("block_hashes");
      assertThat(batch.unpackArrayHeader()).isEqualTo(2);
      assertThat(batch.getNextFormat()).as("a small hash too").isEqualTo(MessageFormat.UINT64);
      assertThat(batch.unpackBigInteger().longValue()).isEqualTo(1);
      assertThat(batch.getNextFormat()).isEqualTo(MessageFormat.UINT64);
      assertThat(batch.unpackBigInteger().longValue()).isEqualTo(BIG);
      assertThat(batch.unpackString()).isEqualTo("parent_block_hash");
      assertThat(batch.unpackBigInteger().longValue()).isEqualTo(7);
      assertThat(batch.unpackString()).isEqualTo("token_ids");
      assertThat(batch.unpackArrayHeader()).isEqualTo(8);

      // a replay from the second batch on: the batches kept, the same bytes, then the end
      ZMQ.Socket dealer = ZmqClients.socket(client, SocketType.DEALER, 5000);
      dealer.connect(publisher.replayEndpoint());
      long from = seen.get(1).sequence();
      dealer.sendMore(new byte[0]);
      dealer.send(ByteBuffer.allocate(8).putLong(from).array());
      List<Long> replayed = new ArrayList<>();
      while (true) {
        assertThat(dealer.recv()).as("empty delimiter").isEmpty();
        byte[] topic = dealer.recv();
        byte[] seq = dealer.recv();
        byte[] payload = dealer.recv();
        if (topic.length == 0) {
          assertThat(seq).containsOnly((byte) -1);
          assertThat(payload).isEmpty();
          break;
        }
        long n = ByteBuffer.wrap(seq).getLong();
        replayed.add(n);
        Received live = seen.stream().filter(r -> r.sequence() == n).findFirst().orElseThrow();
        assertThat(payload).isEqualTo(live.batch());
        assertThat(new String(topic, StandardCharsets.UTF_8)).isEqualTo(TOPIC);
      }
      assertThat(replayed).containsExactly(from, from + 1);
      assertThat(publisher.batches()).isGreaterThanOrEqualTo(3);
      assertThat(publisher.bytes()).isPositive();
    }
  }

  @Test
  void eventsDroppedFromAFullQueueLeaveAGapInTheNumbers() throws Exception {
    try (ZContext client = new ZContext();
        KvEventPublisher publisher = new KvEventPublisher("tcp://127.0.0.1:*", null,
            4, 10, 1000, Duration.ofMillis(300))) {
      ZMQ.Socket sub = ZmqClients.socket(client, SocketType.SUB, 1000);
      sub.connect(publisher.endpoint());
      sub.subscribe(new byte[0]);
      long last = firstBatch(publisher, sub, stored(1)).sequence();
      for (Received late; (late = receive(sub)) != null; ) { // the joining's other batches
        last = late.sequence();
      }

      int taken = 0;
      for (int i = 0; i < 100; i++) { // far more than the queue holds between two batches
        taken += publisher.offer(TOPIC, stored(i)) ? 1 : 0;
      }
      assertThat(publisher.dropped()).isPositive();
      int events = 0;
      Received r;
      List<Long> numbers = new ArrayList<>();
      while ((r = receive(sub)) != null) {
        numbers.add(r.sequence());
        MessageUnpacker batch = MessagePack.newDefaultUnpacker(r.batch());
        batch.unpackArrayHeader();
        batch.unpackDouble();
        events += batch.unpackArrayHeader();
      }
      assertThat(events).as("what the queue took went out").isGreaterThanOrEqualTo(taken);
      assertThat(numbers).isNotEmpty();
      assertThat(numbers.get(0)).as("a gap after the drops").isGreaterThan(last + 1);
    }
  }
}
