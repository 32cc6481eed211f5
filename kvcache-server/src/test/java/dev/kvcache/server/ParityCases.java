package dev.kvcache.server;

import static dev.kvcache.server.BlockApiTest.key;
import static dev.kvcache.server.ProtocolParityTest.digest;
import static dev.kvcache.testkit.TestBytes.random;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.server.ParityTransports.Request;
import dev.kvcache.server.ParityTransports.Server;
import dev.kvcache.server.ParityTransports.Stack;
import dev.kvcache.server.ProtocolParityTest.Kind;
import dev.kvcache.server.ProtocolParityTest.Seen;
import dev.kvcache.server.api.BatchGetController;
import dev.kvcache.server.api.LookupController;
import dev.kvcache.server.http.ExpectContinue;
import dev.kvcache.spi.Crc32c;
import dev.kvcache.wire.Wire;
import io.netty.handler.codec.http2.Http2Error;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.zip.GZIPOutputStream;

/**
 * The requests {@link ProtocolParityTest} sends over every stack: the tokens, keys and blocks they
 * are made of, and each {@link Case} of {@link #cases()} with the answer it expects.
 *
 * <p>Where the protocols differ by design (a body that does not match its {@code Content-Length},
 * which HTTP/1.1 cannot tell from the next request and HTTP/2 resets; when a {@code 100 Continue}
 * goes out; how oversized headers and request lines are refused: docs/server.md, "One API over
 * every stack"), the case says so and checks what the other stack does instead.
 */
final class ParityCases {

  private ParityCases() {}

  /** Reads and writes default, other and ghost (a namespace the server does not serve). */
  static final String WRITER = "w".repeat(40);
  /** Reads default, other and ghost. */
  static final String READER = "r".repeat(40);
  /** Writes default, reads nothing. */
  static final String PUTTER = "p".repeat(40);
  /** May read the metrics, and no namespace. */
  static final String SCRAPER = "m".repeat(40);
  /** Reads and writes other, and no other namespace. */
  static final String STRANGER = "s".repeat(40);

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
        .header(Wire.CHECKSUM, "not base64!").expect(400, "bad-checksum").watch(NEW));
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
        .body(new byte[1000]).expectReset(Http2Error.PROTOCOL_ERROR).watch(NEW).fastOverHttp1()
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
    cases.add(new Case("metrics").send("GET", "/prometheus").auth("Bearer " + SCRAPER).expect(200)
        .kind(Kind.METRICS));
    cases.add(new Case("metrics without a token").send("GET", "/prometheus").auth(null)
        .expect(401, "unauthorized"));
    cases.add(new Case("metrics with a token that may not read them").send("GET", "/prometheus")
        .auth("Bearer " + READER).expect(403, "forbidden"));
    cases.add(new Case("a path with no route").send("GET", NS + "default/nothing")
        .expect(404, "not-found"));
    cases.add(new Case("POST to a block").send("POST", BLOCKS + HIT)
        .header("content-type", "application/octet-stream").body(BODY)
        .expect(405, "method-not-allowed").watch(HIT));
    return cases;
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
    /** Over HTTP/1.1, a PUT to the fast server is stored by its fast path though not over HTTP/2. */
    boolean fastOverHttp1;
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
      return header(Wire.CHECKSUM, Wire.checksum(Crc32c.of(ByteBuffer.wrap(block))));
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

    /**
     * A request to the fast server is answered by a fast path: over HTTP/2, and over HTTP/1.1 if
     * it is a PUT.
     */
    Case fast() {
      fast = true;
      return this;
    }

    /** See {@link #fastOverHttp1}. */
    Case fastOverHttp1() {
      fastOverHttp1 = true;
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
}
