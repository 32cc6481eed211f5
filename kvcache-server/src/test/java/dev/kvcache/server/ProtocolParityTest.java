package dev.kvcache.server;

import static dev.kvcache.server.ParityCases.BLOCK;
import static dev.kvcache.server.ParityCases.BLOCKS;
import static dev.kvcache.server.ParityCases.HIT;
import static dev.kvcache.server.ParityCases.MISS;
import static dev.kvcache.server.ParityCases.NEW;
import static dev.kvcache.server.ParityCases.READER;
import static dev.kvcache.server.ParityCases.keys;
import static dev.kvcache.testkit.TestBytes.random;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.server.ParityCases.Case;
import dev.kvcache.server.ParityTransports.Got;
import dev.kvcache.server.ParityTransports.JdkClient;
import dev.kvcache.server.ParityTransports.RawH1;
import dev.kvcache.server.ParityTransports.RawH2;
import dev.kvcache.server.ParityTransports.Server;
import dev.kvcache.server.ParityTransports.Stack;
import dev.kvcache.server.ParityTransports.Transport;
import dev.kvcache.server.api.LookupController;
import dev.kvcache.server.errors.ApiError;
import dev.kvcache.server.http.FastGet;
import dev.kvcache.server.http.FastPut;
import dev.kvcache.server.http.Http1Requests;
import dev.kvcache.spi.Crc32c;
import dev.kvcache.wire.Wire;
import io.micronaut.core.type.Argument;
import io.micronaut.json.JsonMapper;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The same requests, good and bad, get the same answers whichever way the server takes them: over
 * HTTP/2 with its fast paths on ({@link FastGet} answers GETs of cached blocks, {@link FastPut}
 * stores PUTs, both ahead of Micronaut), over HTTP/2 to a server with both off (everything through
 * the controllers), and over HTTP/1.1.
 *
 * <p>Each case of {@link ParityCases#cases()} is sent by two clients per stack, one writing frames
 * by hand and the JDK's {@code HttpClient} ({@link ParityTransports}). Every case starts from the
 * same cache contents. Answers agree when their status, their headers (all but {@code Date} and
 * the hop-by-hop ones), their body (the bytes of a block; the {@code error} and {@code message} of
 * a JSON error; the fields of a lookup but its load-time estimates) and what the cache then holds
 * under the key the request touched are equal. Every case also states the answer it expects, so
 * that agreeing on a wrong answer fails too, and whether a request to the fast server is answered
 * by a fast path (an HTTP/2 GET or PUT, an HTTP/1.1 PUT), checked on the fast paths' counters: the requests meant to test them do
 * take them, and no other does. Where the protocols differ by design, the case says so and checks
 * what the other stack does instead.
 *
 * <p>{@link #aBlockPutOverAnyStackReadsTheSameOverEveryStack} puts one block under one key by
 * every client in turn (HTTP/1.1 to both servers) and reads it back by every client that reaches
 * the server it went to: every GET, HEAD and batch GET of it, from either server over any stack,
 * answers alike, with the bytes put and their CRC32C.
 */
class ProtocolParityTest {

  /** Headers that describe the connection, not the answer; and the date, which moves on. */
  static final Set<String> NOT_COMPARED = Set.of("date", "connection", "keep-alive",
      "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer");

  @TempDir static Path dir;
  static Server fast;
  static Server routed;
  static JsonMapper json;
  /** Each case goes by each of these. */
  static List<Transport> transports;
  /** HTTP/1.1 to the routed server too: only for reading back blocks put there. */
  static List<Transport> routedHttp1;

  @BeforeAll
  static void start() throws Exception {
    fast = new Server(dir.resolve("fast"), true);
    routed = new Server(dir.resolve("routed"), false);
    json = fast.test.context.getBean(JsonMapper.class);
    transports = List.of(
        new RawH2(fast, Stack.H2_FAST), new JdkClient(fast, Stack.H2_FAST),
        new RawH2(routed, Stack.H2_ROUTED), new JdkClient(routed, Stack.H2_ROUTED),
        new RawH1(fast), new JdkClient(fast, Stack.HTTP1));
    routedHttp1 = List.of(new RawH1(routed), new JdkClient(routed, Stack.HTTP1));
  }

  @AfterAll
  static void stop() {
    if (fast != null) {
      fast.close();
    }
    if (routed != null) {
      routed.close();
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("dev.kvcache.server.ParityCases#cases")
  void everyStackAnswersAlike(Case c) throws Exception {
    Map<Transport, Seen> seen = new LinkedHashMap<>();
    for (Transport t : transports) {
      if (c.rawOnly && t instanceof JdkClient || !t.canSend(c)) {
        continue;
      }
      seen.put(t, exchange(t, c));
    }
    String table = seen.entrySet().stream().map(e -> "\n  " + e.getKey() + ": " + e.getValue())
        .collect(Collectors.joining());
    Set<Seen> alike = new LinkedHashSet<>();
    for (Map.Entry<Transport, Seen> e : seen.entrySet()) {
      Consumer<Seen> otherwise = c.differs.get(e.getKey().stack);
      if (otherwise != null) {
        assertThat(e.getValue()).as("%s, which answers otherwise:%s", e.getKey(), table)
            .satisfies(otherwise);
        continue;
      }
      Seen s = e.getValue();
      assertThat(s.status()).as("%s: the status%s", e.getKey(), table).isEqualTo(c.status);
      if (c.error != null && !c.method.equals("HEAD")) {
        assertThat(s.body()).as("%s: the error%s", e.getKey(), table)
            .startsWith("error=" + c.error + " ");
      }
      alike.add(s);
    }
    assertThat(alike).as("distinct answers to the stacks that answer alike:%s", table).hasSize(1);
  }

  /**
   * Sends a case by one transport, from the state every case starts from; checks that a fast path
   * answered it if, and only if, it should have.
   */
  private static Seen exchange(Transport t, Case c) throws Exception {
    Server s = t.server;
    s.reset();
    String lease = c.setup.apply(s);
    long before = s.fastAnswers();
    Got got = t.send(c.request(lease));
    long taken = s.fastAnswers() - before;
    assertThat(taken).as("%s by %s: answers from a fast path", c, t)
        .isEqualTo(fastPathFor(t, c) ? 1 : 0);
    assertThat(routed.fastAnswers()).as("answers from the fast paths that are off").isZero();
    return view(c, got, lease, c.watched == null ? null : s.stored(c.watched));
  }

  /**
   * Whether a fast path answers the case sent by the transport: both over HTTP/2 to the fast
   * server, and PUTs over HTTP/1.1 to it too ({@link Http1Requests}).
   */
  private static boolean fastPathFor(Transport t, Case c) {
    return t.stack == Stack.H2_FAST ? c.fast
        : t.stack == Stack.HTTP1 && t.server.fastPaths && c.method.equals("PUT")
            && (c.fast || c.fastOverHttp1);
  }

  // ---------------------------------------------------------------------------------------------
  // Blocks put by one stack, read by all

  @Test
  void aBlockPutOverAnyStackReadsTheSameOverEveryStack() throws Exception {
    List<Transport> all = new ArrayList<>(transports);
    all.addAll(routedHttp1);
    byte[] block = random(300_001, 9);
    Case put = new Case("PUT").put(NEW, block).crc(block).expect(201).fast();
    Case get = new Case("GET").get(NEW).expect(200);
    Case head = new Case("HEAD").send("HEAD", BLOCKS + NEW).expect(200);
    Case batch = new Case("batch-get").post("batch-get", keys(MISS, NEW)).expect(200);
    Map<String, Set<Seen>> answers = new TreeMap<>();
    for (Transport writer : all) {
      Server s = writer.server;
      s.reset();
      long puts = s.fastPut.answered();
      Seen stored = view(put, writer.send(put.request(null)), null, s.stored(NEW));
      assertThat(stored.status()).as("PUT by %s: %s", writer, stored).isEqualTo("201");
      assertThat(stored.headers()).contains("kvcache-put=stored");
      assertThat(stored.stored()).isEqualTo(digest(block));
      assertThat(s.fastPut.answered() - puts).as("PUT by %s: stored by FastPut", writer)
          .isEqualTo(fastPathFor(writer, put) ? 1 : 0);
      for (Transport reader : all) {
        if (reader.server != s) {
          continue;
        }
        long gets = s.fastGet.answered();
        Seen got = view(get, reader.send(get.request(null)), null, null);
        assertThat(s.fastGet.answered() - gets).as("GET by %s: answered by FastGet", reader)
            .isEqualTo(reader.stack == Stack.H2_FAST ? 1 : 0);
        answers.computeIfAbsent("GET", k -> new LinkedHashSet<>()).add(got);
        answers.computeIfAbsent("HEAD", k -> new LinkedHashSet<>())
            .add(view(head, reader.send(head.request(null)), null, null));
        answers.computeIfAbsent("batch-get", k -> new LinkedHashSet<>())
            .add(view(batch, reader.send(batch.request(null)), null, null));
      }
    }
    String crc = Wire.checksum(Crc32c.of(ByteBuffer.wrap(block)));
    assertThat(answers.get("GET")).as("every GET of the block").singleElement().satisfies(g -> {
      assertThat(g.status()).isEqualTo("200");
      assertThat(g.body()).isEqualTo(digest(block));
      assertThat(g.headers()).contains("kvcache-block-length=" + block.length,
          Wire.CHECKSUM + "=" + crc, "content-length=" + block.length,
          "content-type=application/octet-stream");
    });
    assertThat(answers.get("HEAD")).as("every HEAD of the block").singleElement().satisfies(h -> {
      assertThat(h.status()).isEqualTo("200");
      assertThat(h.body()).isEmpty();
      assertThat(h.headers()).contains("kvcache-block-length=" + block.length,
          Wire.CHECKSUM + "=" + crc, "content-length=" + block.length);
    });
    assertThat(answers.get("batch-get")).as("every batch GET of the block").singleElement()
        .satisfies(b -> {
          assertThat(b.body()).isEqualTo(digest(block));
          assertThat(b.headers()).contains("kvcache-block-lengths=0," + block.length,
              "kvcache-block-crc32c=" + crc);
        });
  }

  /**
   * Over HTTP/2, a PUT that expects {@code 100-continue} and is refused from its headers gets its
   * {@code 100}, then its whole answer, and its connection goes on serving: Micronaut's own late
   * {@code 100} used to end the connection with a GOAWAY after the answer's headers.
   */
  @Test
  void aRequestRefusedAfterItsContinueLeavesItsConnectionServing() throws Exception {
    for (Server s : List.of(fast, routed)) {
      s.reset();
      try (RawHttp2 h2 = new RawHttp2(s.test.server.getHost(), s.test.server.getPort())) {
        assertThat(h2.exchange(1, "GET", "/health", null, true).headers().status().toString())
            .isEqualTo("200");
        RawHttp2.Answer refused = h2.exchange(3, "PUT", BLOCKS + NEW, null, false,
            "content-type", "application/octet-stream", "content-length", "1000",
            "expect", "100-continue");
        assertThat(refused.headers().status().toString()).isEqualTo("401");
        assertThat(new String(refused.body(), StandardCharsets.UTF_8))
            .contains("\"error\":\"unauthorized\"");
        RawHttp2.Answer next = h2.exchange(5, "GET", BLOCKS + HIT, null, true,
            "authorization", "Bearer " + READER);
        assertThat(next.ended()).as("the stream, or the connection, ended").isNull();
        assertThat(next.headers().status().toString()).isEqualTo("200");
        assertThat(next.body()).isEqualTo(BLOCK);
        assertThat(refused.informational()).containsExactly("100");
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // What an answer is compared by

  /**
   * An answer as compared: status (a number, or how the stream or connection ended without one),
   * headers but those in {@link #NOT_COMPARED}, the body's meaning, what the cache then holds
   * under the case's key, and over HTTP/1.1 the status of a second answer on the connection.
   */
  record Seen(String status, String headers, String body, String stored, String then) {}

  /** How a body is compared. */
  enum Kind {
    /** Byte for byte (by digest). */
    BYTES,
    /** By the error code and message of its JSON. */
    ERROR,
    /** By the fields of a lookup's answer, but its load-time estimates. */
    LOOKUP,
    /** By the status it gives. */
    HEALTH,
    /** As the metrics of the server. */
    METRICS
  }

  static Seen view(Case c, Got got, String lease, String stored) throws Exception {
    boolean head = c.method.equals("HEAD");
    Kind kind = c.kind != null ? c.kind : c.error != null ? Kind.ERROR : Kind.BYTES;
    boolean variable = kind == Kind.LOOKUP || kind == Kind.HEALTH || kind == Kind.METRICS;
    Map<String, String> headers = new TreeMap<>();
    for (String[] h : got.headers()) {
      String name = h[0].toLowerCase(Locale.ROOT);
      if (name.startsWith(":") || NOT_COMPARED.contains(name)) {
        continue;
      }
      headers.merge(name, h[1], (a, b) -> a + "," + b);
    }
    String length = headers.get("content-length");
    if (length != null && !head) {
      assertThat(Integer.parseInt(length)).as("%s: Content-Length", c).isEqualTo(got.body().length);
    }
    if (length != null && variable) {
      headers.put("content-length", "*");
    }
    String body;
    if (got.body().length == 0) {
      body = "";
    } else {
      body = switch (kind) {
        case BYTES -> digest(got.body());
        case ERROR -> {
          ApiError e;
          try {
            e = json.readValue(got.body(), Argument.of(ApiError.class));
          } catch (java.io.IOException notJson) {
            yield "not JSON: " + new String(got.body(), StandardCharsets.UTF_8);
          }
          yield "error=" + e.error() + " message=" + normalize(e.message(), lease);
        }
        case LOOKUP -> {
          LookupController.LookupResponse r =
              json.readValue(got.body(), Argument.of(LookupController.LookupResponse.class));
          assertThat(r.lease() == null || r.lease().matches("[0-9a-f]{32}")).isTrue();
          yield "present=" + r.present() + " tiers=" + r.tiers().stream()
              .map(t -> t.tier() + ":" + t.blocks()).toList()
              + " lease=" + (r.lease() == null ? "none" : "{lease}")
              + " expires_in_ms=" + r.expiresInMillis() + " lengths=" + r.lengths();
        }
        case HEALTH -> "status=" + json.readValue(got.body(),
            Argument.mapOf(String.class, Object.class)).get("status");
        case METRICS -> {
          assertThat(new String(got.body(), StandardCharsets.UTF_8))
              .contains("kvcache_fast_gets_total", "kvcache_fast_puts_total");
          yield "metrics";
        }
      };
    }
    return new Seen(got.status(), headers.toString(), body, stored, got.then());
  }

  private static String normalize(String message, String lease) {
    return lease == null ? message : message.replace(lease, "{lease}");
  }

  static String digest(byte[] bytes) {
    try {
      return "bytes=" + bytes.length + " sha256=" + HexFormat.of().formatHex(
          MessageDigest.getInstance("SHA-256").digest(bytes), 0, 8);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new AssertionError(e);
    }
  }
}
