package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.server.events.KvEventFeed;
import dev.kvcache.server.events.ZmqClients;
import dev.kvcache.wire.Wire;
import java.io.ByteArrayInputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.Value;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * A running server tells a ZMQ subscriber, in vLLM's KV events, what its tiers store and drop of
 * the blocks PUTs named with their engine block ({@code kvcache-engine-} headers): stored in
 * {@code CPU} when a PUT lands in RAM (through the fast path and through Micronaut's), removed on a
 * delete, a move to the disk as removed from {@code CPU} and stored in {@code STORAGE}; headers that
 * name no block are refused and store nothing; a block no PUT named is counted, not told; a lookup
 * by the engine's hashes finds the leading blocks PUTs named.
 */
class KvEventsTest {

  private static final String MODEL = "llama-3.1-8b";
  private static final String TOPIC = "kv@pod-a@" + MODEL;
  private static final int BLOCK_TOKENS = 16;

  @TempDir Path dir;

  /** A batch as the subscriber reads it: its topic, number and events. */
  private record Batch(String topic, long sequence, List<Map<String, Value>> events) {}

  private static Map<String, Object> withEvents(Map<String, Object> more) {
    Map<String, Object> s = new HashMap<>(more);
    s.put("kvcache.events.endpoint", "tcp://127.0.0.1:*");
    s.put("kvcache.events.replay-endpoint", "tcp://127.0.0.1:*");
    s.put("kvcache.events.pool", "pod-a");
    s.put("kvcache.events.interval", "5ms");
    return s;
  }

  /** A subscriber of the server's events. */
  private static ZMQ.Socket subscriber(ZContext client, TestServer server) {
    ZMQ.Socket sub = ZmqClients.socket(client, SocketType.SUB, 200);
    sub.subscribe("kv@".getBytes(StandardCharsets.UTF_8));
    sub.connect(server.bean(KvEventFeed.class).publisher().endpoint());
    return sub;
  }

  /** Offers a marker until the subscriber has joined and reads it, then skips the markers. */
  private static void join(TestServer server, ZMQ.Socket sub) {
    String marker = "kv@pod-a@joining";
    for (int i = 0; i < 100; i++) {
      server.bean(KvEventFeed.class).publisher()
          .offer(marker, new dev.kvcache.server.events.KvEvent.AllBlocksCleared());
      Batch b = receive(sub);
      if (b != null) {
        while ((b = receive(sub)) != null) {
          assertThat(b.topic()).isEqualTo(marker);
        }
        return;
      }
    }
    throw new AssertionError("the subscriber never joined");
  }

  private static Batch receive(ZMQ.Socket sub) {
    byte[] topic = sub.recv();
    if (topic == null) {
      return null;
    }
    long seq = ByteBuffer.wrap(sub.recv()).getLong();
    return new Batch(new String(topic, StandardCharsets.UTF_8), seq, decode(sub.recv()));
  }

  static List<Map<String, Value>> decode(byte[] batch) {
    try (MessageUnpacker in = MessagePack.newDefaultUnpacker(batch)) {
      List<Value> top = in.unpackValue().asArrayValue().list();
      List<Map<String, Value>> events = new ArrayList<>();
      for (Value e : top.get(1).asArrayValue()) {
        Map<String, Value> fields = new HashMap<>();
        e.asMapValue().map().forEach((k, v) -> fields.put(k.asStringValue().asString(), v));
        events.add(fields);
      }
      return events;
    } catch (java.io.IOException e) {
      throw new AssertionError(e);
    }
  }

  /** The events read within {@code millis}, as {@code type medium hash} lines. */
  private static List<String> eventsWithin(ZMQ.Socket sub, long millis, int atLeast) {
    List<String> seen = new ArrayList<>();
    long end = System.nanoTime() + millis * 1_000_000;
    while (System.nanoTime() < end && seen.size() < atLeast) {
      Batch b = receive(sub);
      if (b == null) {
        continue;
      }
      assertThat(b.topic()).isEqualTo(TOPIC);
      for (Map<String, Value> e : b.events()) {
        seen.add(e.get("type").asStringValue().asString() + " "
            + e.get("medium").asStringValue().asString() + " "
            + e.get("block_hashes").asArrayValue().get(0).asIntegerValue().asBigInteger());
      }
    }
    return seen;
  }

  /** The events read until all of {@code expected} are among them, or 10 s passed. */
  private static List<String> awaitEvents(ZMQ.Socket sub, List<String> expected) {
    List<String> seen = new ArrayList<>();
    for (int i = 0; i < 50 && !seen.containsAll(expected); i++) {
      seen.addAll(eventsWithin(sub, 200, Integer.MAX_VALUE));
    }
    return seen;
  }

  private static String lookup(TestServer server, String namespace, String json)
      throws Exception {
    return new String(server.send(HttpRequest.newBuilder(
            server.uri("/v1/namespaces/" + namespace + "/lookup"))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json))).body(), StandardCharsets.UTF_8);
  }

  private static int[] tokens(int block) {
    return IntStream.range(0, BLOCK_TOKENS).map(i -> 100 + block * BLOCK_TOKENS + i).toArray();
  }

  /** A PUT naming engine block {@code hash} (the {@code block}th of a prompt). */
  private static HttpRequest.Builder named(TestServer server, String key, long hash, Long parent,
      int block) {
    HttpRequest.Builder b = HttpRequest.newBuilder(server.uri(TestServer.blockPath("default", key)))
        .header("Content-Type", "application/octet-stream")
        .header(Wire.ENGINE_HASH, Long.toUnsignedString(hash))
        .header(Wire.ENGINE_MODEL, MODEL)
        .header(Wire.ENGINE_TOKENS, IntStream.of(tokens(block)).mapToObj(Integer::toString)
            .collect(Collectors.joining(",")))
        .header(Wire.ENGINE_BLOCK_SIZE, Integer.toString(BLOCK_TOKENS));
    if (parent != null) {
      b.header(Wire.ENGINE_PARENT, Long.toUnsignedString(parent));
    }
    return b;
  }

  private static byte[] bytes(int seed, int length) {
    byte[] b = new byte[length];
    new Random(seed).nextBytes(b);
    return b;
  }

  @Test
  void putsThatNameTheirEngineBlockAreToldStoredAndDeletesRemoved() throws Exception {
    try (TestServer server = TestServer.start(dir, withEvents(Map.of()));
        ZContext client = new ZContext()) {
      ZMQ.Socket sub = subscriber(client, server);
      join(server, sub);

      long big = 0xfedcba9876543210L;
      // the fast path (a Content-Length) and Micronaut's (a chunked body)
      assertThat(server.send(named(server, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1", 11, null, 0)
          .PUT(HttpRequest.BodyPublishers.ofByteArray(bytes(1, 64 << 10)))).statusCode())
          .isEqualTo(201);
      assertThat(server.send(named(server, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa2", big, 11L, 1)
          .PUT(HttpRequest.BodyPublishers.ofInputStream(
              () -> new ByteArrayInputStream(bytes(2, 64 << 10))))).statusCode())
          .isEqualTo(201);
      // RAM's copies, then the disk's (written behind)
      List<String> stored = List.of("BlockStored CPU 11",
          "BlockStored CPU " + Long.toUnsignedString(big), "BlockStored STORAGE 11",
          "BlockStored STORAGE " + Long.toUnsignedString(big));
      assertThat(awaitEvents(sub, stored)).containsExactlyInAnyOrderElementsOf(stored);

      // asked, not told: the leading blocks by the engine's hashes, in this namespace only
      String hashes = "{\"model\":\"" + MODEL + "\",\"engine_hashes\":[11,"
          + Long.toUnsignedString(big) + ",99]}";
      assertThat(lookup(server, "default", hashes)).contains("\"present\":2",
          "{\"tier\":\"ram\",\"blocks\":2");
      assertThat(lookup(server, "other", hashes)).isEqualTo(PinnedLookupTest.NOTHING_FOUND);
      assertThat(lookup(server, "default", "{\"engine_hashes\":[11]}"))
          .contains("bad-lookup", "'model'");

      // a PUT without the headers is stored, counted and not told
      assertThat(server.put("default", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa3", bytes(3, 1024)).statusCode()).isEqualTo(201);
      assertThat(server.send(HttpRequest.newBuilder(server.uri(
          TestServer.blockPath("default", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1"))).DELETE()).statusCode()).isEqualTo(204);
      List<String> removed = List.of("BlockRemoved CPU 11", "BlockRemoved STORAGE 11");
      assertThat(awaitEvents(sub, removed)).containsExactlyInAnyOrderElementsOf(removed);
      assertThat(server.metric("kvcache_events_unnamed_total")).isGreaterThanOrEqualTo(1.0);

      // headers that name no engine block: refused, nothing stored, nothing told
      for (String[] bad : new String[][] {{Wire.ENGINE_HASH, "-1"},
          {Wire.ENGINE_TOKENS, "1,2,x"}, {Wire.ENGINE_BLOCK_SIZE, "8"},
          {Wire.ENGINE_MODEL, "a@b"}}) {
        HttpResponse<byte[]> refused = server.send(named(server, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa4", 4, null, 3)
            .setHeader(bad[0], bad[1]).PUT(HttpRequest.BodyPublishers.ofByteArray(bytes(4, 999))));
        assertThat(refused.statusCode()).as(bad[0] + ": " + bad[1]).isEqualTo(400);
        assertThat(new String(refused.body(), StandardCharsets.UTF_8))
            .contains("bad-engine-block", bad[0]);
      }
      assertThat(server.get("default", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa4").statusCode()).isEqualTo(404);
      assertThat(eventsWithin(sub, 500, 1)).isEmpty();
    }
  }

  /** The tokens of {@code block} as a decoded event prints them. */
  private static String tokenList(int block) {
    return IntStream.of(tokens(block)).mapToObj(Integer::toString)
        .collect(Collectors.joining(",", "[", "]"));
  }

  /** The events of the batches the server's replay socket keeps, from the first, as lines. */
  private static List<String> replayed(ZContext client, TestServer server) {
    ZMQ.Socket dealer = ZmqClients.socket(client, SocketType.DEALER, 5000);
    dealer.connect(server.bean(KvEventFeed.class).publisher().replayEndpoint());
    dealer.sendMore(new byte[0]);
    dealer.send(ByteBuffer.allocate(8).putLong(0).array());
    List<String> seen = new ArrayList<>();
    while (true) {
      assertThat(dealer.recv()).as("empty delimiter").isEmpty();
      byte[] topic = dealer.recv();
      dealer.recv();
      byte[] payload = dealer.recv();
      if (topic.length == 0) {
        return seen;
      }
      for (Map<String, Value> e : decode(payload)) {
        Value parent = e.get("parent_block_hash");
        seen.add(e.get("type").asStringValue().asString() + " "
            + e.get("medium").asStringValue().asString() + " "
            + e.get("block_hashes").asArrayValue().get(0).asIntegerValue().asBigInteger()
            + (parent == null || parent.isNilValue() ? "" : " parent " + parent)
            + (e.containsKey("token_ids") ? " tokens " + e.get("token_ids") : ""));
      }
    }
  }

  @Test
  void aRestartedServerTellsWhatItsDiskKeptByTheEngineNamesAndTellsItsEviction()
      throws Exception {
    long big = 0xfedcba9876543210L;
    try (TestServer server = TestServer.start(dir, withEvents(Map.of()));
        ZContext client = new ZContext()) {
      ZMQ.Socket sub = subscriber(client, server);
      join(server, sub);
      assertThat(server.send(named(server, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1", 11, null, 0)
          .PUT(HttpRequest.BodyPublishers.ofByteArray(bytes(1, 64 << 10)))).statusCode())
          .isEqualTo(201);
      assertThat(server.send(named(server, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa2", big, 11L, 1)
          .PUT(HttpRequest.BodyPublishers.ofByteArray(bytes(2, 64 << 10)))).statusCode())
          .isEqualTo(201);
      List<String> onDisk = List.of("BlockStored STORAGE 11",
          "BlockStored STORAGE " + Long.toUnsignedString(big));
      assertThat(awaitEvents(sub, onDisk)).containsAll(onDisk);
    }
    try (TestServer server = TestServer.start(dir, withEvents(Map.of()));
        ZContext client = new ZContext()) {
      // told again as the disk finds them: with their parents and tokens
      String first = "BlockStored STORAGE 11 tokens " + tokenList(0);
      String second = "BlockStored STORAGE " + Long.toUnsignedString(big) + " parent 11 tokens "
          + tokenList(1);
      List<String> told = new ArrayList<>();
      for (int i = 0; i < 50 && !told.containsAll(List.of(first, second)); i++) {
        Thread.sleep(100);
        told = replayed(client, server);
      }
      assertThat(told).containsExactlyInAnyOrder(first, second);

      // asked: the restarted server finds them by the engine's hashes, on its disk
      String hashes = "{\"model\":\"" + MODEL + "\",\"engine_hashes\":[11,"
          + Long.toUnsignedString(big) + "]}";
      assertThat(lookup(server, "default", hashes)).contains("\"present\":2",
          "{\"tier\":\"disk\",\"blocks\":2");

      ZMQ.Socket sub = subscriber(client, server);
      join(server, sub);
      assertThat(server.send(HttpRequest.newBuilder(server.uri(TestServer.blockPath("default",
          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa2"))).DELETE()).statusCode()).isEqualTo(204);
      List<String> removed = List.of("BlockRemoved STORAGE " + Long.toUnsignedString(big));
      assertThat(awaitEvents(sub, removed)).containsExactlyElementsOf(removed);
    }
  }

  @Test
  void aBlockRamEvictsToTheDiskIsRemovedFromCpuAndStoredInStorage() throws Exception {
    Map<String, Object> small = Map.of("kvcache.cache.ram-bytes", "4MiB",
        "kvcache.cache.max-block-bytes", "1MiB");
    try (TestServer server = TestServer.start(dir, withEvents(small));
        ZContext client = new ZContext()) {
      ZMQ.Socket sub = subscriber(client, server);
      join(server, sub);
      Long parent = null;
      for (int i = 0; i < 8; i++) { // 8 MiB through 4 MiB of RAM
        assertThat(server.send(named(server, String.format("%032x", 0xbb00 + i), 100 + i, parent, i)
            .PUT(HttpRequest.BodyPublishers.ofByteArray(bytes(i, 1 << 20)))).statusCode())
            .isEqualTo(201);
        parent = 100L + i;
      }
      List<String> expected = List.of("BlockStored CPU 100", "BlockStored STORAGE 100",
          "BlockRemoved CPU 100");
      List<String> seen = awaitEvents(sub, expected);
      assertThat(seen).containsAll(expected);
      assertThat(seen.indexOf("BlockStored CPU 100")).isZero();
    }
  }
}
