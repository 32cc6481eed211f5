package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.testkit.TestBytes;
import io.netty.handler.codec.http2.Http2Headers;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code SIGTERM} to a server child process while PUTs and GETs are under way over HTTP/1.1 and
 * HTTP/2: every request that started before the signal completes, HTTP/2 clients get a GOAWAY, new
 * connections are refused (by the kernel, not accepted and reset) from the GOAWAY on, and the cache
 * is closed (every block stored is on disk) at the end.
 */
@Tag("integration")
class GracefulStopTest {

  private static final int BIG = 8 << 20;
  private static final int LOADED = 256 << 10;
  /** The block the loaders GET; the blocks they PUT have the keys after it. */
  private static final int SHARED = 1000;
  /** A loader's request that began this long before the signal was on the wire when it came. */
  private static final long ON_THE_WIRE_NANOS = 30_000_000L;
  /**
   * How long after the drain began new connections are tried: longer than the 100 ms during which
   * a port closed by the stop used to keep completing connections that were then reset.
   */
  private static final long REFUSED_FOR_NANOS = 300_000_000L;

  @TempDir Path dir;

  /** One request of a loader: when it began and ended, and whether it got its answer. */
  private record Outcome(long began, long ended, boolean ok, String what) {}

  @Test
  void everyRequestStartedBeforeSigtermCompletesAndTheCacheIsClosed() throws Exception {
    Map<String, String> settings = Map.of(
        "kvcache.cache.ram-bytes", "128MiB",
        "kvcache.cache.max-block-bytes", BIG + "B",
        "kvcache.cache.disk-dir", dir.toString(),
        "kvcache.cache.disk-capacity", "1GiB",
        "kvcache.cache.disk-min-free", "0B");
    byte[] big = TestBytes.random(BIG, 1);
    byte[] h1Block = TestBytes.random(1 << 20, 2);
    byte[] h2Block = TestBytes.random(32 << 10, 3);
    List<Long> stored = new ArrayList<>();
    ConcurrentLinkedQueue<Outcome> outcomes = new ConcurrentLinkedQueue<>();
    try (TestServer server = TestServer.startChild(settings)) {
      URI base = server.base;
      HttpClient setup = TestServer.http(HttpClient.Version.HTTP_1_1);
      assertThat(setup.send(put(base, 0, big), HttpResponse.BodyHandlers.discarding()).statusCode())
          .isEqualTo(201);

      // requests held open by their clients across the signal
      Socket h1Put = new Socket(base.getHost(), base.getPort());
      h1Put.setSoTimeout(20_000);
      OutputStream h1PutOut = h1Put.getOutputStream();
      h1PutOut.write(head("PUT", 1, "Content-Type: application/octet-stream\r\nContent-Length: "
          + h1Block.length));
      h1PutOut.write(h1Block, 0, h1Block.length / 2);
      h1PutOut.flush();
      Socket h1Get = new Socket();
      h1Get.setReceiveBufferSize(64 << 10); // the 8 MiB answer stays on its way until read
      h1Get.connect(new InetSocketAddress(base.getHost(), base.getPort()));
      h1Get.setSoTimeout(20_000);
      h1Get.getOutputStream().write(head("GET", 0, null));
      RawHttp2 h2 = new RawHttp2(base.getHost(), base.getPort());
      h2.request(1, "PUT", TestServer.blockPath("default", BlockApiTest.key(2)), false,
          "content-length", Integer.toString(h2Block.length));
      h2.data(1, Arrays.copyOf(h2Block, h2Block.length / 2), false);
      h2.request(3, "GET", TestServer.blockPath("default", BlockApiTest.key(0)), true);
      h2.flush(); // the GET gets 64 KiB, HTTP/2's first window, until the client opens it further
      stored.addAll(List.of(0L, 1L, 2L));

      // and four loaders, two on each protocol, whose requests each take about 150 ms
      byte[] shared = TestBytes.random(LOADED, SHARED);
      assertThat(setup.send(put(base, SHARED, shared), HttpResponse.BodyHandlers.discarding())
          .statusCode()).isEqualTo(201);
      stored.add((long) SHARED);
      AtomicBoolean stop = new AtomicBoolean();
      AtomicInteger nextKey = new AtomicInteger(SHARED + 1);
      ExecutorService loaders = Executors.newFixedThreadPool(4);
      for (int l = 0; l < 4; l++) {
        Requester requester = l < 2 ? new Http1Requester(base) : new Http2Requester(base);
        loaders.execute(() -> load(requester, shared, nextKey, stop, outcomes));
      }
      Thread.sleep(600);

      long signal = System.nanoTime();
      server.terminate();
      // the GOAWAY shows the stop draining the connections: its port is closed by then, so the
      // kernel refuses new connections instead of completing them for the server to reset
      Streams streams = new Streams(h2);
      RawHttp2.Frame goAway = streams.readUntil(() -> streams.goAway != null);
      assertThat(goAway).as("GOAWAY on the HTTP/2 connection").isNotNull();
      List<String> attempts = new ArrayList<>();
      for (long drain = System.nanoTime(); System.nanoTime() - drain < REFUSED_FOR_NANOS; ) {
        attempts.add(connectDuringStop(base));
        Thread.sleep(5);
      }
      assertThat(attempts).as("new connections while requests are under way").isNotEmpty()
          .containsOnly("refused");
      Thread.sleep(Math.max(0, 1000 - (System.nanoTime() - signal) / 1_000_000));
      assertThat(server.process.isAlive()).as("the server waits for the requests under way").isTrue();
      assertThat(connectDuringStop(base)).as("a new connection a second after the signal")
          .isEqualTo("refused");
      stop.set(true);
      loaders.shutdown();
      assertThat(loaders.awaitTermination(30, TimeUnit.SECONDS)).isTrue();

      // the held requests complete
      h1PutOut.write(h1Block, h1Block.length / 2, h1Block.length - h1Block.length / 2);
      h1PutOut.flush();
      String h1PutAnswer = new String(h1Put.getInputStream().readNBytes(200), StandardCharsets.ISO_8859_1);
      assertThat(h1PutAnswer).startsWith("HTTP/1.1 201").containsIgnoringCase("connection: close");
      assertSameBytes(readAnswer(h1Get.getInputStream()), big, "the HTTP/1.1 GET under way");

      int lastStream = ByteBuffer.wrap(goAway.payload()).getInt() & 0x7fffffff;
      assertThat(lastStream).as("the GOAWAY's last stream").isGreaterThanOrEqualTo(3);
      h2.data(1, Arrays.copyOfRange(h2Block, h2Block.length / 2, h2Block.length), true);
      h2.openWindows(BIG, BIG + 65_535);
      h2.flush();
      streams.readUntil(() -> streams.putStatus != null && streams.got.size() >= BIG);
      String putStatus = streams.putStatus;
      String getStatus = streams.getStatus;
      ByteArrayOutputStream got = streams.got;
      assertThat(putStatus).as("the HTTP/2 PUT under way").isEqualTo("201");
      assertThat(getStatus).as("the HTTP/2 GET under way").isEqualTo("200");
      assertSameBytes(got.toByteArray(), big, "the HTTP/2 GET under way");
      h2.close();
      h1Put.close();
      h1Get.close();

      assertThat(server.process.waitFor(20, TimeUnit.SECONDS)).as("the server exits").isTrue();

      List<Outcome> before = outcomes.stream().filter(o -> o.began() < signal).toList();
      assertThat(before.stream().filter(o -> o.ended() > signal).count())
          .as("loaders' requests under way at the signal").isGreaterThanOrEqualTo(2);
      assertThat(before.stream().filter(o -> o.began() < signal - ON_THE_WIRE_NANOS && !o.ok()))
          .as("requests that began before the signal and failed").isEmpty();
      for (Outcome o : outcomes) {
        if (o.ok() && o.what().startsWith("PUT ")) {
          stored.add(Long.parseLong(o.what().substring(4)));
        }
      }
    }

    try (TestServer again = TestServer.startChild(settings)) {
      HttpClient client = TestServer.http(HttpClient.Version.HTTP_1_1);
      for (long key : stored) {
        HttpResponse<byte[]> got = client.send(HttpRequest.newBuilder(
            again.base.resolve(TestServer.blockPath("default", BlockApiTest.key(key)))).build(),
            HttpResponse.BodyHandlers.ofByteArray());
        assertThat(got.statusCode()).as("block %d after the stop", key).isEqualTo(200);
        byte[] expected = key == 0 ? big : key == 1 ? h1Block : key == 2 ? h2Block
            : TestBytes.random(LOADED, key);
        assertSameBytes(got.body(), expected, "block " + key + " after the stop");
      }
    }
  }

  /** What the server sent on the HTTP/2 connection: the PUT on stream 1, the GET on stream 3. */
  private static final class Streams {
    final RawHttp2 h2;
    final ByteArrayOutputStream got = new ByteArrayOutputStream();
    RawHttp2.Frame goAway;
    String putStatus;
    String getStatus;

    Streams(RawHttp2 h2) {
      this.h2 = h2;
    }

    /** Reads frames until {@code done} holds; returns the GOAWAY, if one came. */
    RawHttp2.Frame readUntil(java.util.function.BooleanSupplier done) throws Exception {
      for (RawHttp2.Frame f; !done.getAsBoolean() && (f = h2.next()) != null; ) {
        switch (f.type()) {
          case RawHttp2.HEADERS -> {
            Http2Headers h = h2.headers(f);
            if (f.stream() == 1) {
              putStatus = h.status().toString();
            } else if (f.stream() == 3) {
              getStatus = h.status().toString();
            }
          }
          case RawHttp2.DATA -> {
            if (f.stream() == 3) {
              got.write(f.payload());
            }
          }
          case RawHttp2.GOAWAY -> goAway = f;
          default -> { }
        }
      }
      return goAway;
    }
  }

  /** PUTs new blocks and GETs the shared one, each slowly, until told to stop or refused. */
  private static void load(Requester requester, byte[] shared, AtomicInteger nextKey,
      AtomicBoolean stop, ConcurrentLinkedQueue<Outcome> outcomes) {
    for (int i = 0; !stop.get(); i++) {
      long began = System.nanoTime();
      String what;
      boolean ok = false;
      if (i % 2 == 0) {
        int key = nextKey.getAndIncrement();
        what = "PUT " + key;
        try {
          ok = requester.put(TestServer.blockPath("default", BlockApiTest.key(key)),
              TestBytes.random(LOADED, key));
        } catch (IOException e) {
          what += " " + requester + ": " + e;
        }
      } else {
        what = "GET";
        try {
          ok = requester.get(TestServer.blockPath("default", BlockApiTest.key(SHARED)), shared);
        } catch (IOException e) {
          what += " " + requester + ": " + e;
        }
      }
      outcomes.add(new Outcome(began, System.nanoTime(), ok, what));
      if (!ok && stop.get()) {
        break;
      }
    }
    requester.close();
  }

  /** A loader's connection: slow PUTs and GETs, true when answered in full as expected. */
  private interface Requester {
    boolean put(String path, byte[] block) throws IOException;

    boolean get(String path, byte[] expected) throws IOException;

    default void close() {}
  }

  /** Over HTTP/1.1 keep-alive, by the JDK's client. */
  private static final class Http1Requester implements Requester {
    private final HttpClient client = TestServer.http(HttpClient.Version.HTTP_1_1);
    private final URI base;

    Http1Requester(URI base) {
      this.base = base;
    }

    @Override
    public boolean put(String path, byte[] block) throws IOException {
      HttpRequest request = HttpRequest.newBuilder(base.resolve(path))
          .header("Content-Type", "application/octet-stream")
          .timeout(Duration.ofSeconds(30))
          .PUT(HttpRequest.BodyPublishers.fromPublisher(
              HttpRequest.BodyPublishers.ofInputStream(() -> new SlowStream(block)), block.length))
          .build();
      return send(request, HttpResponse.BodyHandlers.discarding()).statusCode() == 201;
    }

    @Override
    public boolean get(String path, byte[] expected) throws IOException {
      HttpResponse<InputStream> got = send(HttpRequest.newBuilder(base.resolve(path))
          .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofInputStream());
      try (InputStream body = new SlowStream(got.body())) {
        return got.statusCode() == 200 && Arrays.equals(body.readAllBytes(), expected);
      }
    }

    private <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler)
        throws IOException {
      try {
        return client.send(request, handler);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException(e);
      }
    }

    @Override
    public String toString() {
      return "HTTP/1.1";
    }
  }

  /**
   * Over one HTTP/2 connection, frame by frame: JDK 17's client fails every stream of a connection
   * on any GOAWAY, even those the GOAWAY lets finish, so it cannot show what the
   * server does. After a GOAWAY this one opens no stream; the streams it covers run to the end.
   */
  private static final class Http2Requester implements Requester {
    private final RawHttp2 h2;
    private int nextStream = 1;
    private int lastStream = Integer.MAX_VALUE;

    Http2Requester(URI base) {
      try {
        h2 = new RawHttp2(base.getHost(), base.getPort());
        h2.openWindows(1 << 20, 1 << 30);
        h2.flush();
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }

    @Override
    public boolean put(String path, byte[] block) throws IOException {
      int stream = open("PUT", path, block.length);
      // frames of HTTP/2's first largest frame, 16 KiB: the server's SETTINGS are not read yet
      for (int at = 0, step = 0; at < block.length; at += 16 << 10, step++) {
        int end = Math.min(block.length, at + (16 << 10));
        h2.data(stream, Arrays.copyOfRange(block, at, end), end == block.length);
        h2.flush();
        if (step < 8) {
          pause();
        }
      }
      return answer(stream, new ByteArrayOutputStream(), false).equals("201");
    }

    @Override
    public boolean get(String path, byte[] expected) throws IOException {
      int stream = open("GET", path, -1);
      ByteArrayOutputStream body = new ByteArrayOutputStream();
      return answer(stream, body, true).equals("200") && Arrays.equals(body.toByteArray(), expected);
    }

    private int open(String method, String path, int length) throws IOException {
      if (lastStream != Integer.MAX_VALUE) {
        throw new IOException("GOAWAY received before the request");
      }
      int stream = nextStream;
      nextStream += 2;
      if (length < 0) {
        h2.request(stream, method, path, true);
      } else {
        h2.request(stream, method, path, false, "content-length", Integer.toString(length));
      }
      h2.flush();
      return stream;
    }

    /** The stream's status once it ended, its DATA into {@code body}, read slowly if asked. */
    private String answer(int stream, ByteArrayOutputStream body, boolean slowly) throws IOException {
      String status = null;
      int frames = 0;
      try {
        for (RawHttp2.Frame f; (f = h2.next()) != null; ) {
          if (f.type() == RawHttp2.HEADERS) {
            Http2Headers headers = h2.headers(f);
            if (f.stream() == stream) {
              status = headers.status().toString();
            }
          } else if (f.type() == RawHttp2.DATA && f.stream() == stream) {
            body.write(f.payload());
            if (slowly && frames++ < 8) {
              pause();
            }
          } else if (f.type() == RawHttp2.RST_STREAM && f.stream() == stream) {
            throw new IOException("stream " + stream + " reset, error " + f.errorCode());
          } else if (f.type() == RawHttp2.GOAWAY) {
            lastStream = ByteBuffer.wrap(f.payload()).getInt() & 0x7fffffff;
            if (stream > lastStream) {
              throw new IOException("GOAWAY before stream " + stream + ", last " + lastStream);
            }
          }
          if (f.stream() == stream && (f.flags() & RawHttp2.END_STREAM) != 0) {
            return String.valueOf(status);
          }
        }
      } catch (io.netty.handler.codec.http2.Http2Exception e) {
        throw new IOException(e);
      }
      throw new IOException("the connection closed before stream " + stream + " ended");
    }

    private static void pause() throws IOException {
      try {
        Thread.sleep(18);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException(e);
      }
    }

    @Override
    public void close() {
      try {
        h2.close();
      } catch (IOException ignored) {
        // closed by the server already
      }
    }

    @Override
    public String toString() {
      return "HTTP/2";
    }
  }

  /**
   * Opens a new connection to a stopping server: {@code refused} if the kernel refused it (nothing
   * listens on the port), else what became of a request sent on it.
   */
  private static String connectDuringStop(URI base) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(base.getHost(), base.getPort()), 5_000);
      s.setSoTimeout(5_000);
      try {
        s.getOutputStream().write(head("GET", SHARED, null));
        return "accepted, then " + (s.getInputStream().read() < 0 ? "closed" : "answered");
      } catch (IOException e) {
        return "accepted, then " + e;
      }
    } catch (ConnectException e) {
      return e.getMessage() != null && e.getMessage().contains("refused") ? "refused" : e.toString();
    } catch (IOException e) {
      return e.toString();
    }
  }

  /** Compares bytes without printing megabytes of them. */
  private static void assertSameBytes(byte[] actual, byte[] expected, String what) {
    assertThat(actual.length).as("%s: length", what).isEqualTo(expected.length);
    assertThat(Arrays.mismatch(actual, expected)).as("%s: first byte that differs", what).isEqualTo(-1);
  }

  private static byte[] head(String method, long key, String headers) {
    return (method + " " + TestServer.blockPath("default", BlockApiTest.key(key))
        + " HTTP/1.1\r\nHost: test\r\n" + (headers == null ? "" : headers + "\r\n") + "\r\n")
        .getBytes(StandardCharsets.US_ASCII);
  }

  /** The body of an HTTP/1.1 answer with a Content-Length, after checking its status is 200. */
  private static byte[] readAnswer(InputStream in) throws IOException {
    String head = RawHttp.readHead(in);
    assertThat(head).startsWith("HTTP/1.1 200");
    String length = head.lines()
        .filter(l -> l.toLowerCase().startsWith("content-length:")).findFirst().orElseThrow();
    return in.readNBytes(Integer.parseInt(length.substring(15).trim()));
  }

  private static HttpRequest put(URI base, long key, byte[] block) {
    return HttpRequest.newBuilder(base.resolve(TestServer.blockPath("default", BlockApiTest.key(key))))
        .header("Content-Type", "application/octet-stream")
        .PUT(HttpRequest.BodyPublishers.ofByteArray(block)).build();
  }

  /** Reads its source in 32 KiB steps with a pause after each of the first eight: about 150 ms. */
  private static final class SlowStream extends InputStream {
    private final InputStream source;
    private int steps;

    SlowStream(byte[] bytes) {
      this(new java.io.ByteArrayInputStream(bytes));
    }

    SlowStream(InputStream source) {
      this.source = source;
    }

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (steps++ < 8) {
        try {
          Thread.sleep(18);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IOException(e);
        }
      }
      return source.read(b, off, Math.min(len, 32 << 10));
    }

    @Override
    public void close() throws IOException {
      source.close();
    }
  }
}
