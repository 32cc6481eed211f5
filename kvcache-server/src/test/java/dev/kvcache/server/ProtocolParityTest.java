package dev.kvcache.server;

import static dev.kvcache.server.BlockApiTest.key;
import static dev.kvcache.server.BlockApiTest.random;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.spi.Crc32c;
import io.micronaut.core.type.Argument;
import io.micronaut.json.JsonMapper;
import io.netty.handler.codec.http2.Http2Error;
import java.io.ByteArrayOutputStream;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.zip.GZIPOutputStream;
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
 * <p>Each case of {@link #cases()} is sent by two clients per stack: frames written by hand
 * ({@link RawHttp2} with prior knowledge, {@link RawHttp}), which can also send what no polite
 * client sends (lying lengths, stalled bodies, no {@code Content-Type}), and the JDK's {@code
 * HttpClient} (HTTP/2 by upgrade). Every case starts from the same cache contents. Answers agree
 * when their status, their headers (all but {@code Date} and the hop-by-hop ones), their body (the
 * bytes of a block; the {@code error} and {@code message} of a JSON error; the fields of a lookup
 * but its load-time estimates) and what the cache then holds under the key the request touched are
 * equal. Every case also states the answer it expects, so that agreeing on a wrong answer fails
 * too, and whether an HTTP/2 request to the fast server is answered by a fast path, checked on the
 * fast paths' counters: the requests meant to test them do take them, and no other does.
 *
 * <p>Where the protocols differ by design (a body that does not match its {@code Content-Length},
 * which HTTP/1.1 cannot tell from the next request and HTTP/2 resets; when a {@code 100 Continue}
 * goes out; how oversized headers and request lines are refused: docs/server.md, "One API over
 * every stack"), the case says so and checks what the other stack does instead.
 *
 * <p>{@link #aBlockPutOverAnyStackReadsTheSameOverEveryStack} puts one block under one key by
 * every client in turn (HTTP/1.1 to both servers) and reads it back by every client that reaches
 * the server it went to: every GET, HEAD and batch GET of it, from either server over any stack,
 * answers alike, with the bytes put and their CRC32C.
 */
class ProtocolParityTest {

  /** Reads and writes default, other and ghost (a namespace the server does not serve). */
  static final String WRITER = "w".repeat(40);
  /** Reads default, other and ghost. */
  static final String READER = "r".repeat(40);
  /** Writes default, reads nothing. */
  static final String PUTTER = "p".repeat(40);

  static final int MAX = 1 << 20;
  static final int MAX_PINS = 4;
  static final String HIT = key(1);
  static final String HIT2 = key(2);
  static final String MISS = key(3);
  static final String NEW = key(4);
  /** Cached under {@link #HIT} and {@link #HIT2} in namespace default at the start of each case. */
  static final byte[] BLOCK = random(200_000, 1);
  static final byte[] BLOCK2 = random(70_000, 2);
  /** A body to PUT: larger than HTTP/2's first windows, so flow control takes part. */
  static final byte[] BODY = random(150_000, 3);

  static final String NS = "/v1/namespaces/";
  static final String BLOCKS = NS + "default/blocks/";
  static final String LEASES = NS + "default/leases/";

  /** Headers that describe the connection, not the answer; and the date, which moves on. */
  static final Set<String> NOT_COMPARED = Set.of("date", "connection", "keep-alive",
      "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer");

  /** The three ways the server takes a request. */
  enum Stack {
    H2_FAST, H2_ROUTED, HTTP1
  }

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

  // ---------------------------------------------------------------------------------------------
  // The cases

  static List<Case> cases() throws Exception {
    List<Case> cases = new ArrayList<>();
    // PUT
    cases.add(new Case("PUT a new block with its checksum").put(NEW, BODY).crc(BODY)
        .expect(201).fast().watch(NEW));
    cases.add(new Case("PUT a new block without a checksum").put(NEW, BODY)
        .expect(201).fast().watch(NEW));
    cases.add(new Case("PUT over a cached block").put(HIT, BODY).crc(BODY)
        .expect(201).fast().watch(HIT));
    cases.add(new Case("PUT a block of one byte").put(NEW, new byte[] {7})
        .expect(201).fast().watch(NEW));
    byte[] largest = random(MAX, 4);
    cases.add(new Case("PUT the largest block").put(NEW, largest).crc(largest)
        .expect(201).fast().watch(NEW));
    cases.add(new Case("PUT with the scheme in lower case").put(NEW, BODY)
        .auth("bearer " + WRITER).expect(201).fast().watch(NEW));
    cases.add(new Case("PUT with the content type in capitals").send("PUT", BLOCKS + NEW)
        .header("content-type", "Application/Octet-Stream").body(BODY)
        .expect(201).fast().watch(NEW));
    cases.add(new Case("PUT with a parameter in the content type").send("PUT", BLOCKS + NEW)
        .header("content-type", "application/octet-stream; charset=binary").body(BODY)
        .expect(201).watch(NEW));
    cases.add(new Case("PUT expecting 100-continue").put(NEW, BODY)
        .header("expect", "100-continue").rawOnly().expect100(201).fast().watch(NEW));
    cases.add(new Case("PUT expecting 100-continue in capitals").put(NEW, BODY)
        .header("expect", "100-Continue").rawOnly().expect100(201).fast().watch(NEW));
    cases.add(new Case("PUT expecting something else").put(NEW, BODY)
        .header("expect", "the-unexpected").rawOnly().expect(201).fast().watch(NEW));
    cases.add(new Case("PUT expecting 100-continue without a token").put(NEW, BODY).auth(null)
        .header("expect", "100-continue").rawOnly().expect100(401, "unauthorized").watch(NEW)
        .differsOn(Stack.HTTP1, refusedWithoutContinue(401, "unauthorized")));
    cases.add(new Case("PUT expecting 100-continue of a length over the largest block")
        .send("PUT", BLOCKS + NEW).header("content-type", "application/octet-stream")
        .header("content-length", Integer.toString(MAX + 1)).header("expect", "100-continue")
        .body(new byte[0]).stalls().expect100(413, "too-large").watch(NEW)
        .differsOn(Stack.HTTP1, refusedWithoutContinue(413, "too-large")));
    cases.add(new Case("PUT without a length").put(NEW, BODY).chunked()
        .expect(201).watch(NEW));
    cases.add(new Case("PUT gzip-coded").put(NEW, gzip(BODY)).header("content-encoding", "gzip")
        .expect(201).watch(NEW));
    cases.add(new Case("PUT kvcache-lz4-coded").put(NEW, WireCodecTest.encode(BODY))
        .header("content-encoding", "kvcache-lz4").crc(BODY).expect(201).watch(NEW));
    cases.add(new Case("PUT in a coding not taken").put(NEW, BODY).header("content-encoding", "br")
        .expect(415, "unsupported-encoding").watch(NEW));
    cases.add(new Case("PUT whose checksum does not match").put(NEW, BODY).crc(BLOCK)
        .expect(400, "checksum-mismatch").fast().watch(NEW));
    cases.add(new Case("PUT with a malformed checksum").put(NEW, BODY)
        .header(Crc32c.HEADER, "not base64!").expect(400, "bad-checksum").watch(NEW));
    cases.add(new Case("PUT without a content type").send("PUT", BLOCKS + NEW).body(BODY)
        .expect(415, "unsupported-media-type").watch(NEW));
    cases.add(new Case("PUT of text").send("PUT", BLOCKS + NEW).header("content-type", "text/plain")
        .body(BODY).expect(415, "unsupported-media-type").watch(NEW));
    cases.add(new Case("PUT of an empty body").put(NEW, new byte[0])
        .expect(400, "empty-block").watch(NEW));
    cases.add(new Case("PUT of an empty body without a length").put(NEW, new byte[0]).chunked()
        .expect(400, "empty-block").watch(NEW));
    cases.add(new Case("PUT of a length over the largest block").send("PUT", BLOCKS + NEW)
        .header("content-type", "application/octet-stream")
        .header("content-length", Integer.toString(MAX + 1)).body(new byte[0]).stalls()
        .expect(413, "too-large").watch(NEW));
    cases.add(new Case("PUT of a body over the largest block, without a length")
        .put(NEW, new byte[MAX + 1]).chunked().rawOnly().expect(413, "too-large").watch(NEW));
    cases.add(new Case("PUT with a key too short").put("abc", BODY).expect(400, "bad-key"));
    cases.add(new Case("PUT with a key not hex").put("z".repeat(32), BODY).expect(400, "bad-key"));
    cases.add(new Case("PUT in a namespace not served").send("PUT", NS + "ghost/blocks/" + NEW)
        .header("content-type", "application/octet-stream").body(BODY)
        .expect(404, "unknown-namespace"));
    cases.add(new Case("PUT with a token that may only read").put(NEW, BODY)
        .auth("Bearer " + READER)
        .expect(403, "forbidden").watch(NEW));
    cases.add(new Case("PUT without a token").put(NEW, BODY).auth(null)
        .expect(401, "unauthorized").watch(NEW));
    cases.add(new Case("PUT with an unknown token").put(NEW, BODY).auth("Bearer " + "x".repeat(40))
        .expect(401, "unauthorized").watch(NEW));
    cases.add(new Case("PUT whose body stops coming").send("PUT", BLOCKS + NEW)
        .header("content-type", "application/octet-stream")
        .header("content-length", Integer.toString(BODY.length))
        .body(Arrays.copyOf(BODY, 20_000)).stalls()
        .expect(408, "body-timeout").fast().watch(NEW));
    cases.add(new Case("PUT whose body ends before its length").send("PUT", BLOCKS + NEW)
        .header("content-type", "application/octet-stream").header("content-length", "1000")
        .body(Arrays.copyOf(BODY, 500)).expectReset(Http2Error.PROTOCOL_ERROR).watch(NEW)
        .differsOn(Stack.HTTP1, seen -> {
          // the connection's end is the body's: nothing to answer, nothing stored
          assertThat(seen.status()).isEqualTo("closed");
          assertThat(seen.stored()).isEqualTo("absent");
        }));
    cases.add(new Case("PUT whose body runs past its length").send("PUT", BLOCKS + NEW)
        .header("content-type", "application/octet-stream").header("content-length", "500")
        .body(new byte[1000]).expectReset(Http2Error.PROTOCOL_ERROR).watch(NEW)
        .differsOn(Stack.HTTP1, seen -> {
          // the length frames the body: its first 500 bytes are the block; the rest would be the
          // connection's next request, which its Connection: close leaves unread
          assertThat(seen.status()).isEqualTo("201");
          assertThat(seen.stored()).isEqualTo(digest(new byte[500]));
          assertThat(seen.then()).isNull();
        }));

    // GET and HEAD
    cases.add(new Case("GET a cached block").get(HIT).expect(200).fast());
    cases.add(new Case("GET a cached block with a query").send("GET", BLOCKS + HIT + "?x=1")
        .expect(200));
    cases.add(new Case("GET with the key in capitals").get(HIT.toUpperCase(Locale.ROOT))
        .expect(200).fast());
    cases.add(new Case("GET accepting gzip").get(HIT).header("accept-encoding", "gzip")
        .expect(200).fast());
    cases.add(new Case("GET accepting kvcache-lz4").get(HIT)
        .header("accept-encoding", "gzip, kvcache-lz4").expect(200));
    cases.add(new Case("GET refusing kvcache-lz4").get(HIT)
        .header("accept-encoding", "kvcache-lz4;q=0").expect(200).fast());
    cases.add(new Case("GET with a trailing slash").send("GET", BLOCKS + HIT + "/").expect(200));
    cases.add(new Case("GET with the key percent-encoded")
        .send("GET", BLOCKS + "%30" + HIT.substring(1)).expect(200));
    cases.add(new Case("GET with a body").get(HIT).header("content-type", "text/plain")
        .body("why".getBytes(StandardCharsets.UTF_8)).expect(200));
    cases.add(new Case("GET with the scheme in lower case").get(HIT).auth("bearer " + READER)
        .expect(200).fast());
    cases.add(new Case("GET a block not cached").get(MISS).expect(404, "not-cached"));
    cases.add(new Case("GET with a key too short").get("abc").expect(400, "bad-key"));
    cases.add(new Case("GET with a key too long").get(HIT + "0").expect(400, "bad-key"));
    cases.add(new Case("GET with a key not hex").get("g".repeat(32)).expect(400, "bad-key"));
    cases.add(new Case("GET in a namespace not served").send("GET", NS + "ghost/blocks/" + HIT)
        .expect(404, "unknown-namespace"));
    cases.add(new Case("GET with headers over 64 KiB").get(HIT)
        .header("x-filler", "f".repeat(70_000))
        .rawOnly().expect(431).kind(Kind.ERROR)
        .differsOn(Stack.HTTP1, seen -> {
          // the decoder gave up on the request: Micronaut's JSON error, and the connection closes
          assertThat(seen.status()).isEqualTo("431");
          assertThat(seen.body()).startsWith("error=request-header-fields-too-large ");
        }));
    cases.add(new Case("GET with a path over 4 KiB").get("a".repeat(5000)).rawOnly()
        .expect(400, "bad-key")
        .differsOn(Stack.HTTP1, seen -> {
          // HTTP/1.1 reads the path as part of the request line, whose limit it passed
          assertThat(seen.status()).isEqualTo("414");
          assertThat(seen.body()).startsWith("error=request-uri-too-long ");
        }));
    cases.add(new Case("GET with a token that may not read").get(HIT).auth("Bearer " + PUTTER)
        .expect(403, "forbidden"));
    cases.add(new Case("GET in a namespace the token may not read")
        .send("GET", NS + "nope/blocks/" + HIT).expect(403, "forbidden"));
    cases.add(new Case("GET without a token").get(HIT).auth(null).expect(401, "unauthorized"));
    cases.add(new Case("GET with an unknown token").get(HIT).auth("Bearer " + "x".repeat(40))
        .expect(401, "unauthorized"));
    cases.add(new Case("HEAD of a cached block").send("HEAD", BLOCKS + HIT).expect(200));
    cases.add(new Case("HEAD of a block not cached").send("HEAD", BLOCKS + MISS)
        .expect(404, "not-cached"));
    cases.add(new Case("HEAD with a bad key").send("HEAD", BLOCKS + "abc").expect(400, "bad-key"));
    cases.add(new Case("HEAD without a token").send("HEAD", BLOCKS + HIT).auth(null)
        .expect(401, "unauthorized"));

    // DELETE
    cases.add(new Case("DELETE a cached block").send("DELETE", BLOCKS + HIT).expect(204)
        .watch(HIT));
    cases.add(new Case("DELETE a block not cached").send("DELETE", BLOCKS + MISS)
        .expect(404, "not-cached"));
    cases.add(new Case("DELETE with a bad key").send("DELETE", BLOCKS + "abc")
        .expect(400, "bad-key"));
    cases.add(new Case("DELETE with a token that may only read").send("DELETE", BLOCKS + HIT)
        .auth("Bearer " + READER).expect(403, "forbidden").watch(HIT));
    cases.add(new Case("DELETE without a token").send("DELETE", BLOCKS + HIT).auth(null)
        .expect(401, "unauthorized").watch(HIT));

    // batch GET
    cases.add(new Case("batch-get of hits and a miss").post("batch-get", keys(HIT, MISS, HIT2, HIT))
        .expect(200));
    cases.add(new Case("batch-get of misses").post("batch-get", keys(MISS, NEW)).expect(200));
    cases.add(new Case("batch-get of no keys").post("batch-get", keys()).expect(400, "bad-batch"));
    cases.add(new Case("batch-get without keys").post("batch-get", "{}").expect(400, "bad-batch"));
    cases.add(new Case("batch-get of too many keys")
        .post("batch-get", keys(manyKeys(BatchGetController.MAX_KEYS + 1)))
        .expect(400, "bad-batch"));
    cases.add(new Case("batch-get with a bad key").post("batch-get", keys(HIT, "abc"))
        .expect(400, "bad-key"));
    cases.add(new Case("batch-get without a body").send("POST", NS + "default/batch-get")
        .header("content-type", "application/json").expect(400, "bad-request"));
    cases.add(new Case("batch-get of malformed JSON").post("batch-get", "{\"keys\":")
        .expect(400, "invalid-json"));
    cases.add(new Case("batch-get without a content type").send("POST", NS + "default/batch-get")
        .body(keys(HIT).getBytes(StandardCharsets.UTF_8)).expect(200));
    cases.add(new Case("batch-get in a namespace not served")
        .send("POST", NS + "ghost/batch-get").header("content-type", "application/json")
        .body(keys(HIT).getBytes(StandardCharsets.UTF_8)).expect(404, "unknown-namespace"));
    cases.add(new Case("batch-get without a token").post("batch-get", keys(HIT)).auth(null)
        .expect(401, "unauthorized"));

    // lookups, pinned or not
    cases.add(new Case("lookup").post("lookup", keys(HIT, HIT2, MISS, HIT)).expect(200)
        .kind(Kind.LOOKUP));
    cases.add(new Case("lookup that finds nothing").post("lookup", keys(MISS, HIT)).expect(200)
        .kind(Kind.LOOKUP));
    cases.add(new Case("pinned lookup").post("lookup", pinned(5000, HIT, HIT2, MISS)).expect(200)
        .kind(Kind.LOOKUP));
    cases.add(new Case("pinned lookup that finds nothing").post("lookup", pinned(5000, MISS))
        .expect(200).kind(Kind.LOOKUP));
    for (String pin : new String[] {"0", "-1", "60001"}) {
      cases.add(new Case("pinned lookup with pin_ms " + pin)
          .post("lookup", "{\"keys\":[\"" + HIT + "\"],\"pin_ms\":" + pin + "}")
          .expect(400, "bad-lookup"));
    }
    cases.add(new Case("pinned lookup with pin_ms not a number")
        .post("lookup", "{\"keys\":[\"" + HIT + "\"],\"pin_ms\":\"soon\"}")
        .expect(400, "bad-request"));
    cases.add(new Case("pinned lookup while too many pins are open").pins(MAX_PINS)
        .post("lookup", pinned(5000, HIT)).expect(503, "too-many-pins"));
    cases.add(new Case("lookup without a body").send("POST", NS + "default/lookup")
        .header("content-type", "application/json").expect(400, "bad-request"));
    cases.add(new Case("lookup of no keys").post("lookup", keys()).expect(400, "bad-lookup"));
    cases.add(new Case("lookup of too many keys")
        .post("lookup", keys(manyKeys(LookupController.MAX_KEYS + 1))).expect(400, "bad-lookup"));
    cases.add(new Case("lookup with a bad key").post("lookup", keys(HIT, "abc"))
        .expect(400, "bad-key"));
    cases.add(new Case("lookup in a namespace not served").send("POST", NS + "ghost/lookup")
        .header("content-type", "application/json")
        .body(keys(HIT).getBytes(StandardCharsets.UTF_8)).expect(404, "unknown-namespace"));
    cases.add(new Case("lookup without a token").post("lookup", keys(HIT)).auth(null)
        .expect(401, "unauthorized"));

    // pinned blocks and their leases
    cases.add(new Case("GET a pinned block").pin().send("GET", LEASES + "{lease}/blocks/1")
        .expect(200));
    cases.add(new Case("GET a pinned block past the last").pin()
        .send("GET", LEASES + "{lease}/blocks/2").expect(404, "no-block"));
    cases.add(new Case("GET a pinned block before the first").pin()
        .send("GET", LEASES + "{lease}/blocks/-1").expect(404, "no-block"));
    cases.add(new Case("GET a pinned block by a name, not an index").pin()
        .send("GET", LEASES + "{lease}/blocks/first").expect(400, "bad-request"));
    cases.add(new Case("GET a block of a lease never given").send("GET", LEASES + "0".repeat(32)
        + "/blocks/0").expect(404, "no-lease"));
    cases.add(new Case("GET a block of a released lease").pinReleased()
        .send("GET", LEASES + "{lease}/blocks/0").expect(404, "no-lease"));
    cases.add(new Case("GET a pinned block in another namespace").pin()
        .send("GET", NS + "other/leases/{lease}/blocks/0").expect(404, "no-lease"));
    cases.add(new Case("GET a pinned block without a token").pin().auth(null)
        .send("GET", LEASES + "{lease}/blocks/0").expect(401, "unauthorized"));
    cases.add(new Case("release a lease").pin().send("DELETE", LEASES + "{lease}").expect(204));
    cases.add(new Case("release a released lease").pinReleased().send("DELETE", LEASES + "{lease}")
        .expect(404, "no-lease"));
    cases.add(new Case("release a lease with a token that may only read").pin()
        .auth("Bearer " + READER).send("DELETE", LEASES + "{lease}").expect(204));
    cases.add(new Case("release a lease without a token").pin().auth(null)
        .send("DELETE", LEASES + "{lease}").expect(401, "unauthorized"));

    // the rest
    cases.add(new Case("health").send("GET", "/health").auth(null).expect(200).kind(Kind.HEALTH));
    cases.add(new Case("metrics").send("GET", "/prometheus").auth(null).expect(200)
        .kind(Kind.METRICS));
    cases.add(new Case("a path with no route").send("GET", NS + "default/nothing")
        .expect(404, "not-found"));
    cases.add(new Case("POST to a block").send("POST", BLOCKS + HIT)
        .header("content-type", "application/octet-stream").body(BODY)
        .expect(405, "method-not-allowed").watch(HIT));
    return cases;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
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
        .isEqualTo(c.fast && t.stack == Stack.H2_FAST ? 1 : 0);
    assertThat(routed.fastAnswers()).as("answers from the fast paths that are off").isZero();
    return view(c, got, lease, c.watched == null ? null : s.stored(c.watched));
  }

  // ---------------------------------------------------------------------------------------------
  // Blocks put by one stack, read by all

  @Test
  void aBlockPutOverAnyStackReadsTheSameOverEveryStack() throws Exception {
    List<Transport> all = new ArrayList<>(transports);
    all.addAll(routedHttp1);
    byte[] block = random(300_001, 9);
    Case put = new Case("PUT").put(NEW, block).crc(block).expect(201);
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
          .isEqualTo(writer.stack == Stack.H2_FAST ? 1 : 0);
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
    String crc = Crc32c.toHeader(Crc32c.of(ByteBuffer.wrap(block)));
    assertThat(answers.get("GET")).as("every GET of the block").singleElement().satisfies(g -> {
      assertThat(g.status()).isEqualTo("200");
      assertThat(g.body()).isEqualTo(digest(block));
      assertThat(g.headers()).contains("kvcache-block-length=" + block.length,
          Crc32c.HEADER + "=" + crc, "content-length=" + block.length,
          "content-type=application/octet-stream");
    });
    assertThat(answers.get("HEAD")).as("every HEAD of the block").singleElement().satisfies(h -> {
      assertThat(h.status()).isEqualTo("200");
      assertThat(h.body()).isEmpty();
      assertThat(h.headers()).contains("kvcache-block-length=" + block.length,
          Crc32c.HEADER + "=" + crc, "content-length=" + block.length);
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

  /** An answer as received, before it is compared. */
  record Got(String status, List<String[]> headers, byte[] body, String then) {}

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

  // ---------------------------------------------------------------------------------------------
  // Requests

  /** A request as each client is to send it. */
  record Request(String method, String path, byte[] body, boolean chunked, boolean ends,
      List<String> headers) {

    /** The {@code content-length} the case gives itself, or null: then the client says its own. */
    String declaredLength() {
      for (int i = 0; i < headers.size(); i += 2) {
        if (headers.get(i).equals("content-length")) {
          return headers.get(i + 1);
        }
      }
      return null;
    }
  }

  /** A request, what it should be answered, and what it needs first. */
  static final class Case {
    final String name;
    String method;
    String path;
    byte[] body;
    boolean chunked;
    boolean ends = true;
    final List<String> headers = new ArrayList<>();
    String authorization = "Bearer " + WRITER;
    Function<Server, String> setup = s -> null;
    String status;
    String error;
    boolean fast;
    boolean rawOnly;
    Kind kind;
    String watched;
    final Map<Stack, Consumer<Seen>> differs = new EnumMap<>(Stack.class);

    Case(String name) {
      this.name = name;
    }

    Case send(String method, String path) {
      this.method = method;
      this.path = path;
      return this;
    }

    Case put(String key, byte[] body) {
      return send("PUT", BLOCKS + key).header("content-type", "application/octet-stream")
          .body(body);
    }

    Case get(String key) {
      return send("GET", BLOCKS + key);
    }

    Case post(String what, String json) {
      return send("POST", NS + "default/" + what).header("content-type", "application/json")
          .body(json.getBytes(StandardCharsets.UTF_8));
    }

    Case header(String name, String value) {
      headers.add(name);
      headers.add(value);
      return this;
    }

    Case crc(byte[] block) {
      return header(Crc32c.HEADER, Crc32c.toHeader(Crc32c.of(ByteBuffer.wrap(block))));
    }

    Case body(byte[] body) {
      this.body = body;
      return this;
    }

    /** Sent without a length: chunked over HTTP/1.1, no {@code content-length} over HTTP/2. */
    Case chunked() {
      chunked = true;
      return this;
    }

    /** The body is sent, but the request does not end. */
    Case stalls() {
      ends = false;
      return this;
    }

    /** The {@code Authorization} header, or null for none. */
    Case auth(String authorization) {
      this.authorization = authorization;
      return this;
    }

    /** A lease on {@link #HIT} and {@link #HIT2}, as {@code {lease}} in the path. */
    Case pin() {
      setup = s -> s.pin(HIT, HIT2);
      return this;
    }

    /** {@code n} leases open before the request. */
    Case pins(int n) {
      setup = s -> {
        for (int i = 0; i < n; i++) {
          s.pin(HIT);
        }
        return null;
      };
      return this;
    }

    /** A lease, released before the request. */
    Case pinReleased() {
      setup = s -> {
        String lease = s.pin(HIT, HIT2);
        assertThat(s.pins.release("default", lease)).isTrue();
        return lease;
      };
      return this;
    }

    Case expect(int status) {
      this.status = Integer.toString(status);
      return this;
    }

    /** The answer {@code status}, after an interim {@code 100}. */
    Case expect100(int status) {
      this.status = "100 " + status;
      return this;
    }

    /** The error {@code error} with {@code status}, after an interim {@code 100}. */
    Case expect100(int status, String error) {
      this.error = error;
      return expect100(status);
    }

    Case expect(int status, String error) {
      this.error = error;
      return expect(status);
    }

    /** Over HTTP/2, the stream is reset with this error instead of answered. */
    Case expectReset(Http2Error error) {
      status = "reset " + error;
      return this;
    }

    /** An HTTP/2 request to the fast server is answered by a fast path. */
    Case fast() {
      fast = true;
      return this;
    }

    /** A request the JDK's client will not send as it is (or, over HTTP/1.1, cannot finish). */
    Case rawOnly() {
      rawOnly = true;
      return this;
    }

    Case kind(Kind kind) {
      this.kind = kind;
      return this;
    }

    /** The key (in namespace default) whose block is compared after the request. */
    Case watch(String key) {
      watched = key;
      return this;
    }

    /** The stack answers otherwise, by design; {@code check} says how. */
    Case differsOn(Stack stack, Consumer<Seen> check) {
      differs.put(stack, check);
      return this;
    }

    Request request(String lease) {
      List<String> all = new ArrayList<>(headers);
      if (authorization != null) {
        all.add("authorization");
        all.add(authorization);
      }
      return new Request(method, lease == null ? path : path.replace("{lease}", lease), body,
          chunked, ends, all);
    }

    @Override
    public String toString() {
      return name;
    }
  }

  /**
   * Over HTTP/1.1 Micronaut sends its {@code 100} only once the body is read: a request refused
   * from its headers gets its answer alone. Over HTTP/2 the {@code 100} goes out at once
   * ({@link ExpectContinue}).
   */
  static Consumer<Seen> refusedWithoutContinue(int status, String error) {
    return seen -> {
      assertThat(seen.status()).isEqualTo(Integer.toString(status));
      assertThat(seen.body()).startsWith("error=" + error + " ");
      assertThat(seen.stored()).isEqualTo("absent");
    };
  }

  static String keys(String... keys) {
    return Arrays.stream(keys).map(k -> "\"" + k + "\"")
        .collect(Collectors.joining(",", "{\"keys\":[", "]}"));
  }

  static String[] manyKeys(int n) {
    return IntStream.range(0, n).mapToObj(i -> key(100 + i)).toArray(String[]::new);
  }

  static String pinned(int millis, String... keys) {
    String plain = keys(keys);
    return plain.substring(0, plain.length() - 1) + ",\"pin_ms\":" + millis + "}";
  }

  static byte[] gzip(byte[] bytes) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (GZIPOutputStream gz = new GZIPOutputStream(out)) {
      gz.write(bytes);
    }
    return out.toByteArray();
  }

  // ---------------------------------------------------------------------------------------------
  // The servers

  /** A server with tokens, and the beans a case's set-up and checks reach into. */
  static final class Server implements AutoCloseable {
    final TestServer test;
    final KvCache cache;
    final Namespaces namespaces;
    final PinRegistry pins;
    final FastGet fastGet;
    final FastPut fastPut;

    Server(Path dir, boolean fastPaths) {
      Map<String, Object> p = new HashMap<>();
      p.put("kvcache.cache.max-block-bytes", MAX + "B");
      p.put("kvcache.body-timeout", "1s");
      // no block waits to be written behind, so that whether RAM takes a PUT at once, and with
      // it whether the fast path does, does not hang on the spill threads' progress
      p.put("kvcache.cache.durability", "ram_first");
      p.put("kvcache.wire-codec", "lz4");
      p.put("kvcache.max-pins", MAX_PINS);
      p.put("kvcache.fast-get", fastPaths);
      p.put("kvcache.fast-put", fastPaths);
      p.put("kvcache.auth.tokens.writer.secret", WRITER);
      p.put("kvcache.auth.tokens.writer.read", "default,other,ghost");
      p.put("kvcache.auth.tokens.writer.write", "default,other,ghost");
      p.put("kvcache.auth.tokens.reader.secret", READER);
      p.put("kvcache.auth.tokens.reader.read", "default,other,ghost");
      p.put("kvcache.auth.tokens.putter.secret", PUTTER);
      p.put("kvcache.auth.tokens.putter.write", "default");
      test = TestServer.start(dir, p);
      cache = test.context.getBean(KvCache.class);
      namespaces = test.context.getBean(Namespaces.class);
      pins = test.context.getBean(PinRegistry.class);
      fastGet = test.context.getBean(FastGet.class);
      fastPut = test.context.getBean(FastPut.class);
    }

    BlockKey storageKey(String key) {
      return namespaces.storageKey("default", key);
    }

    /** Back to where every case starts: {@link #HIT} and {@link #HIT2} cached, no other block. */
    void reset() {
      pins.releaseAll();
      for (String ns : List.of("default", "other")) {
        for (String key : List.of(HIT, HIT2, MISS, NEW)) {
          cache.delete(namespaces.storageKey(ns, key));
        }
      }
      assertThat(cache.put(storageKey(HIT), ByteBuffer.wrap(BLOCK))).isEqualTo(PutStatus.STORED);
      assertThat(cache.put(storageKey(HIT2), ByteBuffer.wrap(BLOCK2))).isEqualTo(PutStatus.STORED);
    }

    /** A pinned lookup's lease on these keys' blocks. */
    String pin(String... keys) {
      PrefixPin pin = cache.pinPrefix(Arrays.stream(keys).map(this::storageKey).toList(),
          Duration.ofSeconds(30));
      return pins.register("default", pin);
    }

    /** The block cached under {@code key}, as {@link #digest}, or "absent". */
    String stored(String key) {
      try (BlockLease lease = cache.get(storageKey(key))) {
        if (lease.status() != GetStatus.HIT) {
          return "absent";
        }
        ByteBuffer bytes = lease.bytes().duplicate();
        byte[] copy = new byte[bytes.remaining()];
        bytes.get(copy);
        return digest(copy);
      }
    }

    long fastAnswers() {
      return fastGet.answered() + fastPut.answered();
    }

    @Override
    public void close() {
      test.close();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // The clients

  abstract static class Transport {
    final Server server;
    final Stack stack;

    Transport(Server server, Stack stack) {
      this.server = server;
      this.stack = stack;
    }

    boolean canSend(Case c) {
      return true;
    }

    abstract Got send(Request r) throws Exception;
  }

  /** HTTP/2 with prior knowledge, frame by frame; a new connection per request. */
  static final class RawH2 extends Transport {
    RawH2(Server server, Stack stack) {
      super(server, stack);
    }

    @Override
    Got send(Request r) throws Exception {
      try (RawHttp2 h2 = new RawHttp2(server.test.server.getHost(), server.test.server.getPort())) {
        // the connection's first request goes to Micronaut, which sets the fast paths up
        RawHttp2.Answer first = h2.exchange(1, "GET", "/health", null, true);
        assertThat(first.headers().status().toString()).isEqualTo("200");
        List<String> headers = new ArrayList<>(r.headers());
        if (r.body() != null && !r.chunked() && r.declaredLength() == null) {
          headers.add("content-length");
          headers.add(Integer.toString(r.body().length));
        }
        RawHttp2.Answer a = h2.exchange(3, r.method(), r.path(), r.body(), r.ends(),
            headers.toArray(String[]::new));
        List<String[]> got = new ArrayList<>();
        String status;
        String interim = a.informational().stream().map(i -> i + " ").collect(Collectors.joining());
        if (a.headers() != null) {
          a.headers().forEach(h -> got.add(new String[] {h.getKey().toString(),
              h.getValue().toString()}));
          status = interim + a.headers().status();
        } else if (a.ended() != null && a.ended().type() == RawHttp2.RST_STREAM) {
          status = interim + "reset " + Http2Error.valueOf(a.ended().errorCode());
        } else {
          status = a.ended() != null ? "goaway" : "no answer";
        }
        return new Got(status, got, a.body(), null);
      }
    }

    @Override
    public String toString() {
      return stack + " frames";
    }
  }

  /** HTTP/1.1 written by hand; a new connection per request, closed after the answer. */
  static final class RawH1 extends Transport {
    RawH1(Server server) {
      super(server, Stack.HTTP1);
    }

    @Override
    Got send(Request r) throws Exception {
      StringBuilder head = new StringBuilder(r.method() + " " + r.path()
          + " HTTP/1.1\r\nHost: test\r\nConnection: close");
      for (int i = 0; i < r.headers().size(); i += 2) {
        head.append("\r\n").append(r.headers().get(i)).append(": ").append(r.headers().get(i + 1));
      }
      byte[] wire = r.body() == null ? new byte[0] : r.body();
      if (r.body() != null && r.chunked()) {
        head.append("\r\nTransfer-Encoding: chunked");
        ByteArrayOutputStream chunked = new ByteArrayOutputStream();
        if (wire.length > 0) {
          chunked.writeBytes((Integer.toHexString(wire.length) + "\r\n")
              .getBytes(StandardCharsets.US_ASCII));
          chunked.writeBytes(wire);
          chunked.writeBytes("\r\n".getBytes(StandardCharsets.US_ASCII));
        }
        chunked.writeBytes("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        wire = chunked.toByteArray();
      } else if (r.body() != null && r.declaredLength() == null) {
        head.append("\r\nContent-Length: ").append(wire.length);
      }
      // a request whose body ends before its length can only end with the connection
      boolean cutShort = r.ends() && r.declaredLength() != null
          && Long.parseLong(r.declaredLength()) > wire.length;
      String received =
          RawHttp.exchange(server.test.server.getURL(), head.toString(), wire, cutShort);
      RawHttp.Answer a = RawHttp.parse(received, r.method().equals("HEAD"));
      if (a == null) {
        return new Got("closed", List.of(), new byte[0], null);
      }
      RawHttp.Answer next = a.after().isEmpty() ? null : RawHttp.parse(a.after(), false);
      String interim = a.informational().stream().map(i -> i + " ").collect(Collectors.joining());
      return new Got(interim + a.status(), a.headers(), a.body(),
          next == null ? null : Integer.toString(next.status()));
    }

    @Override
    public String toString() {
      return (server == fast ? "" : "routed ") + "HTTP/1.1 by hand";
    }
  }

  /** The JDK's HttpClient: HTTP/2 by upgrade (its first request, to /health), or HTTP/1.1. */
  static final class JdkClient extends Transport {
    final HttpClient client;
    final HttpClient.Version version;

    JdkClient(Server server, Stack stack) throws Exception {
      super(server, stack);
      if (stack == Stack.HTTP1) {
        version = HttpClient.Version.HTTP_1_1;
        client = server.test.http;
      } else {
        version = HttpClient.Version.HTTP_2;
        client = FastGetTest.h2(server.test);
      }
    }

    /** Everything but lengths of its own and requests that do not end: the JDK sets those. */
    @Override
    boolean canSend(Case c) {
      return c.ends && !c.headers.contains("content-length");
    }

    @Override
    Got send(Request r) throws Exception {
      HttpRequest.Builder b = HttpRequest.newBuilder(server.test.uri(r.path()))
          .timeout(Duration.ofSeconds(20));
      for (int i = 0; i < r.headers().size(); i += 2) {
        b.header(r.headers().get(i), r.headers().get(i + 1));
      }
      HttpRequest.BodyPublisher body = r.body() == null ? HttpRequest.BodyPublishers.noBody()
          : r.chunked()
              ? HttpRequest.BodyPublishers.fromPublisher(
                  HttpRequest.BodyPublishers.ofByteArray(r.body()))
              : HttpRequest.BodyPublishers.ofByteArray(r.body());
      HttpResponse<byte[]> a = client.send(b.method(r.method(), body).build(),
          HttpResponse.BodyHandlers.ofByteArray());
      assertThat(a.version()).isEqualTo(version);
      List<String[]> headers = new ArrayList<>();
      a.headers().map().forEach((name, values) ->
          values.forEach(v -> headers.add(new String[] {name, v})));
      return new Got(Integer.toString(a.statusCode()), headers, a.body(), null);
    }

    @Override
    public String toString() {
      return (stack == Stack.HTTP1 && server == routed ? "routed " : "") + stack + " JDK client";
    }
  }
}
