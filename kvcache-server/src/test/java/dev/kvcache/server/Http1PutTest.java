package dev.kvcache.server;

import static dev.kvcache.server.BlockApiTest.key;
import static dev.kvcache.testkit.TestBytes.random;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.server.http.Http1Requests;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * HTTP/1.1 PUTs stored ahead of Micronaut ({@link Http1Requests}): answers keep the order of
 * their requests when a client sends several at once, whether the fast path or Micronaut answers
 * each and whether a commit waits; a body too slow is answered 408 and frees its room; {@code
 * Connection: close} closes after the answer.
 */
class Http1PutTest {

  @TempDir Path dir;

  private static byte[] put(String key, byte[] body, String... headers) {
    StringBuilder head = new StringBuilder("PUT " + TestServer.blockPath("default", key)
        + " HTTP/1.1\r\nHost: test\r\nContent-Type: application/octet-stream\r\nContent-Length: "
        + body.length + "\r\n");
    for (String h : headers) {
      head.append(h).append("\r\n");
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(head.append("\r\n").toString().getBytes(StandardCharsets.US_ASCII));
    out.writeBytes(body);
    return out.toByteArray();
  }

  private static byte[] get(String path, String... headers) {
    StringBuilder head = new StringBuilder("GET " + path + " HTTP/1.1\r\nHost: test\r\n");
    for (String h : headers) {
      head.append(h).append("\r\n");
    }
    return head.append("\r\n").toString().getBytes(StandardCharsets.US_ASCII);
  }

  /** Sends the requests in one write, and reads every answer until the server closes. */
  private static List<RawHttp.Answer> pipelined(TestServer server, byte[]... requests)
      throws Exception {
    try (Socket socket = new Socket(server.server.getHost(), server.server.getPort())) {
      socket.setSoTimeout(10_000);
      ByteArrayOutputStream all = new ByteArrayOutputStream();
      for (byte[] r : requests) {
        all.writeBytes(r);
      }
      OutputStream out = socket.getOutputStream();
      out.write(all.toByteArray());
      out.flush();
      return answers(socket.getInputStream());
    }
  }

  private static List<RawHttp.Answer> answers(InputStream in) throws Exception {
    String received = new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
    List<RawHttp.Answer> answers = new ArrayList<>();
    for (RawHttp.Answer a; !received.isEmpty() && (a = RawHttp.parse(received, false)) != null; ) {
      answers.add(a);
      received = a.after();
    }
    return answers;
  }

  private static String header(RawHttp.Answer a, String name) {
    return a.headers().stream().filter(h -> h[0].equals(name)).map(h -> h[1]).findFirst()
        .orElse(null);
  }

  @ParameterizedTest(name = "commits wait {0}")
  @ValueSource(booleans = {false, true})
  void pipelinedRequestsAreAnsweredInTheirOrder(boolean commitsWait) throws Exception {
    try (TestServer server = TestServer.start(dir,
        // ram_first: no copy of a block is on its way to the disk, which would send the PUT that
        // replaces it to Micronaut
        commitsWait ? Map.of("test.commit-delay", "200ms")
            : Map.of("kvcache.cache.durability", "ram_first"))) {
      byte[] first = random(300_000, 1);
      byte[] second = random(1 << 20, 2);
      long before = FastPutTest.answered(server);
      List<RawHttp.Answer> answers = pipelined(server,
          get("/health"), // Micronaut's
          put(key(1), first), // taken only once the answer before it is written
          get(TestServer.blockPath("default", key(1))), // reads what the PUT before it stored
          put(key(2), second),
          put(key(1), second), // replaces the first
          get(TestServer.blockPath("default", key(1)), "Connection: close"));
      assertThat(answers).extracting(a -> a.status() + " " + a.body().length)
          .containsExactly("200 " + answers.get(0).body().length, "201 0", "200 300000", "201 0",
              "201 0", "200 " + second.length);
      assertThat(new String(answers.get(0).body(), StandardCharsets.UTF_8)).contains("UP");
      assertThat(Arrays.equals(answers.get(2).body(), first)).as("the first block read").isTrue();
      assertThat(Arrays.equals(answers.get(5).body(), second)).as("the block that replaced it")
          .isTrue();
      assertThat(header(answers.get(1), "kvcache-put")).isEqualTo("stored");
      assertThat(FastPutTest.answered(server) - before).as("PUTs taken ahead of Micronaut")
          .isEqualTo(3);
      assertThat(Arrays.equals(server.get("default", key(2)).body(), second)).isTrue();
    }
  }

  @Test
  void aPutAfterOneMicronautIsStillAnsweringWaitsItsTurn() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      byte[] block = random(200_000, 3);
      long before = FastPutTest.answered(server);
      // a chunked PUT goes to Micronaut; the PUT behind it must not be answered first
      String chunkedHead = "PUT " + TestServer.blockPath("default", key(3)) + " HTTP/1.1\r\n"
          + "Host: test\r\nContent-Type: application/octet-stream\r\n"
          + "Transfer-Encoding: chunked\r\n\r\n";
      ByteArrayOutputStream chunked = new ByteArrayOutputStream();
      chunked.writeBytes(chunkedHead.getBytes(StandardCharsets.US_ASCII));
      chunked.writeBytes((Integer.toHexString(block.length) + "\r\n")
          .getBytes(StandardCharsets.US_ASCII));
      chunked.writeBytes(block);
      chunked.writeBytes("\r\n0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      List<RawHttp.Answer> answers = pipelined(server, chunked.toByteArray(),
          put(key(4), new byte[0]), // empty: Micronaut answers 400
          put(key(5), block, "Connection: close"));
      assertThat(answers).extracting(RawHttp.Answer::status).containsExactly(201, 400, 201);
      assertThat(FastPutTest.answered(server) - before).isEqualTo(1);
      assertThat(Arrays.equals(server.get("default", key(3)).body(), block)).isTrue();
      assertThat(Arrays.equals(server.get("default", key(5)).body(), block)).isTrue();
    }
  }

  @Test
  void aBodyTooSlowIsAnswered408AndFreesItsRoom() throws Exception {
    try (TestServer server = TestServer.start(dir, Map.of("kvcache.body-timeout", "300ms"))) {
      long used = server.ramBytesUsed();
      long before = FastPutTest.answered(server);
      byte[] request = put(key(6), new byte[1 << 20]);
      try (Socket socket = new Socket(server.server.getHost(), server.server.getPort())) {
        socket.setSoTimeout(10_000);
        socket.getOutputStream().write(request, 0, request.length / 2);
        socket.getOutputStream().flush();
        List<RawHttp.Answer> answers = answers(socket.getInputStream()); // until it closes
        assertThat(answers).hasSize(1);
        assertThat(answers.get(0).status()).isEqualTo(408);
        assertThat(new String(answers.get(0).body(), StandardCharsets.UTF_8))
            .contains("\"error\":\"body-timeout\"");
        assertThat(header(answers.get(0), "connection")).isEqualTo("close");
      }
      assertThat(FastPutTest.answered(server) - before).isEqualTo(1);
      server.awaitRamBytesUsed(used);
      assertThat(server.get("default", key(6)).statusCode()).isEqualTo(404);
    }
  }

  @Test
  void aPutThatExpects100ContinueGetsItFirst() throws Exception {
    try (TestServer server = TestServer.start(dir);
        Socket socket = new Socket(server.server.getHost(), server.server.getPort())) {
      socket.setSoTimeout(10_000);
      byte[] block = random(100_000, 7);
      byte[] request = put(key(7), block, "Expect: 100-continue", "Connection: close");
      int headEnd = request.length - block.length;
      OutputStream out = socket.getOutputStream();
      out.write(request, 0, headEnd);
      out.flush();
      String interim = RawHttp.readHead(socket.getInputStream());
      assertThat(interim).startsWith("HTTP/1.1 100");
      out.write(block);
      out.flush();
      List<RawHttp.Answer> answers = answers(socket.getInputStream());
      assertThat(answers).extracting(RawHttp.Answer::status).containsExactly(201);
      assertThat(Arrays.equals(server.get("default", key(7)).body(), block)).isTrue();
    }
  }
}
