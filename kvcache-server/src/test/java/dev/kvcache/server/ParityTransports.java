package dev.kvcache.server;

import static dev.kvcache.server.ParityCases.BLOCK2;
import static dev.kvcache.server.ParityCases.BLOCK;
import static dev.kvcache.server.ParityCases.HIT2;
import static dev.kvcache.server.ParityCases.HIT;
import static dev.kvcache.server.ParityCases.MAX;
import static dev.kvcache.server.ParityCases.MAX_PINS;
import static dev.kvcache.server.ParityCases.MISS;
import static dev.kvcache.server.ParityCases.NEW;
import static dev.kvcache.server.ParityCases.PUTTER;
import static dev.kvcache.server.ParityCases.READER;
import static dev.kvcache.server.ParityCases.WRITER;
import static dev.kvcache.server.ProtocolParityTest.digest;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.server.ParityCases.Case;
import dev.kvcache.server.access.Namespaces;
import dev.kvcache.server.api.PinRegistry;
import dev.kvcache.server.http.FastGet;
import dev.kvcache.server.http.FastPut;
import io.netty.handler.codec.http2.Http2Error;
import java.io.ByteArrayOutputStream;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The two servers a {@link ProtocolParityTest} case goes to, one with the fast paths on and one
 * with them off, and the clients it goes by, two per stack: frames written by hand
 * ({@link RawHttp2} with prior knowledge, {@link RawHttp}), which can also send what no polite
 * client sends (lying lengths, stalled bodies, no {@code Content-Type}), and the JDK's {@code
 * HttpClient} (HTTP/2 by upgrade, or HTTP/1.1).
 */
final class ParityTransports {

  private ParityTransports() {}

  /** The three ways the server takes a request. */
  enum Stack {
    H2_FAST, H2_ROUTED, HTTP1
  }

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

  /** An answer as received, before it is compared. */
  record Got(String status, List<String[]> headers, byte[] body, String then) {}

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
    final boolean fastPaths;

    Server(Path dir, boolean fastPaths) {
      this.fastPaths = fastPaths;
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
      p.put("kvcache.auth.tokens.scraper.secret", ParityCases.SCRAPER);
      p.put("kvcache.auth.tokens.scraper.metrics", true);
      p.put("kvcache.auth.tokens.stranger.secret", ParityCases.STRANGER);
      p.put("kvcache.auth.tokens.stranger.read", "other");
      p.put("kvcache.auth.tokens.stranger.write", "other");
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

    /**
     * Back to where every case starts: {@link ParityCases#HIT} and {@link ParityCases#HIT2} cached,
     * no other block.
     */
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
      return pins.register("default", pin, false).lease();
    }

    /** The block cached under {@code key}, as {@link ProtocolParityTest#digest}, or "absent". */
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
      return (server.fastPaths ? "" : "routed ") + "HTTP/1.1 by hand";
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
      return (stack == Stack.HTTP1 && !server.fastPaths ? "routed " : "") + stack + " JDK client";
    }
  }
}
