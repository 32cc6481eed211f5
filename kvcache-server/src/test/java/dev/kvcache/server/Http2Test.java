package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.testkit.TestBytes;
import java.io.DataInputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** HTTP/2 cleartext on the same port as HTTP/1.1: with prior knowledge and by upgrade. */
class Http2Test {

  @TempDir Path dir;

  @Test
  void aConnectionThatStartsWithTheHttp2PrefaceIsAnsweredInHttp2() throws Exception {
    try (TestServer server = TestServer.start(dir);
        Socket socket = new Socket(server.server.getHost(), server.server.getPort())) {
      socket.setSoTimeout(10_000);
      OutputStream out = socket.getOutputStream();
      out.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      out.write(new byte[] {0, 0, 0, 4, 0, 0, 0, 0, 0}); // an empty SETTINGS frame
      out.flush();
      DataInputStream in = new DataInputStream(socket.getInputStream());
      byte[] frameHeader = new byte[9];
      in.readFully(frameHeader);
      int type = frameHeader[3];
      int stream = ((frameHeader[5] & 0x7f) << 24) | ((frameHeader[6] & 0xff) << 16)
          | ((frameHeader[7] & 0xff) << 8) | (frameHeader[8] & 0xff);
      assertThat(type).as("frame type: SETTINGS").isEqualTo(4);
      assertThat(stream).isZero();
    }
  }

  @Test
  void blocksAnsweredAtOnceOnOneConnectionGoOutInFullSizeFrames() throws Exception {
    int blockBytes = 256 << 10;
    int streams = 4;
    try (TestServer server = TestServer.start(dir);
        RawHttp2 h2 = new RawHttp2(server.server.getHost(), server.server.getPort())) {
      for (int i = 0; i < streams; i++) {
        server.put("default", BlockApiTest.key(i), TestBytes.random(blockBytes, i));
      }
      h2.openWindows(blockBytes, streams * blockBytes);
      for (int i = 0; i < streams; i++) {
        h2.request(1 + 2 * i, "GET", TestServer.blockPath("default", BlockApiTest.key(i)), true);
      }
      h2.flush();
      long received = 0;
      int frames = 0;
      int ended = 0;
      for (RawHttp2.Frame f; ended < streams && (f = h2.next()) != null; ) {
        if (f.type() == RawHttp2.DATA) {
          received += f.payload().length;
          frames += f.payload().length > 0 ? 1 : 0;
          ended += (f.flags() & RawHttp2.END_STREAM) != 0 ? 1 : 0;
        }
      }
      assertThat(received).isEqualTo((long) streams * blockBytes);
      // the client takes frames of up to 16 KiB: 64 of them would do; in Netty's default turns of
      // 1 KiB per stream it is several hundred
      assertThat(frames).as("DATA frames for %d bytes", received).isLessThanOrEqualTo(2 * 64);
    }
  }

  @Test
  void anHttp11ClientCanUpgradeToHttp2() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      byte[] block = TestBytes.random(1000, 3);
      server.put("default", BlockApiTest.key(1), block);
      HttpClient h2 = HttpClient.newBuilder().version(HttpClient.Version.HTTP_2).build();
      HttpResponse<byte[]> get = h2.send(HttpRequest.newBuilder(
              server.uri(TestServer.blockPath("default", BlockApiTest.key(1)))).build(),
          HttpResponse.BodyHandlers.ofByteArray());
      assertThat(get.version()).isEqualTo(HttpClient.Version.HTTP_2);
      assertThat(get.body()).isEqualTo(block);
    }
  }

  /**
   * Also when the request comes in the same read as the client's preface: kvcache's stages are in
   * place before the connection's first frame is read.
   */
  @ParameterizedTest(name = "preface sent first: {0}")
  @ValueSource(booleans = {true, false})
  void aStreamAnsweredLongBeforeItsBodyEndsIsResetWithNoErrorAndTheConnectionServesOn(
      boolean prefaceFirst) throws Exception {
    byte[] block = TestBytes.random(4096, 5);
    try (TestServer server = TestServer.start(dir);
        RawHttp2 h2 = new RawHttp2(server.server.getHost(), server.server.getPort(),
            prefaceFirst)) {
      server.put("default", BlockApiTest.key(5), block);
      // more than twice the largest block still to come: not worth reading
      h2.request(1, "PUT", TestServer.blockPath("default", BlockApiTest.key(6)), false,
          "content-length", String.valueOf(4L * TestServer.MAX_BLOCK_BYTES));
      h2.data(1, new byte[1000], false);
      h2.flush();
      assertThat(h2.nextHeaders(1).status().toString()).isEqualTo("413");
      RawHttp2.Frame reset = h2.nextReset(1);
      assertThat(reset).as("RST_STREAM on the answered stream").isNotNull();
      assertThat(reset.errorCode()).as("NO_ERROR").isZero();

      h2.request(3, "GET", TestServer.blockPath("default", BlockApiTest.key(5)), true);
      h2.flush();
      assertThat(h2.nextHeaders(3).status().toString()).isEqualTo("200");
    }
  }

  @Test
  void aBodyStillArrivingAfterItsAnswerIsReadAndDroppedSoThatItsClientCanFinish()
      throws Exception {
    byte[] block = TestBytes.random(4096, 7);
    try (TestServer server = TestServer.start(dir);
        RawHttp2 h2 = new RawHttp2(server.server.getHost(), server.server.getPort())) {
      server.put("default", BlockApiTest.key(5), block);
      int length = TestServer.MAX_BLOCK_BYTES + 1; // refused from its Content-Length
      h2.request(1, "PUT", TestServer.blockPath("default", BlockApiTest.key(6)), false,
          "content-length", String.valueOf(length));
      long connectionWindow = 65_535;
      long streamWindow = 1 << 20; // the server's initial-window-size (application.yml)
      byte[] chunk = new byte[16 << 10];
      String status = null;
      int sent = 0;
      while (sent < length) {
        int n = (int) Math.min(Math.min(chunk.length, length - sent),
            Math.min(connectionWindow, streamWindow));
        if (n > 0) {
          h2.data(1, n == chunk.length ? chunk : new byte[n], sent + n == length);
          sent += n;
          connectionWindow -= n;
          streamWindow -= n;
          continue;
        }
        h2.flush();
        RawHttp2.Frame f = h2.next();
        assertThat(f).as("window given back, %d of %d bytes sent", sent, length).isNotNull();
        if (f.type() == RawHttp2.HEADERS) {
          String answered = h2.headers(f).status().toString();
          status = f.stream() == 1 ? answered : status;
        } else if (f.type() == RawHttp2.WINDOW_UPDATE && f.stream() == 0) {
          connectionWindow += f.windowIncrement();
        } else if (f.type() == RawHttp2.WINDOW_UPDATE && f.stream() == 1) {
          streamWindow += f.windowIncrement();
        } else {
          assertThat(f.type() == RawHttp2.RST_STREAM && f.stream() == 1)
              .as("the stream is not reset, %d of %d bytes sent", sent, length).isFalse();
        }
      }
      h2.flush();
      assertThat(status != null ? status : h2.nextHeaders(1).status().toString())
          .isEqualTo("413");

      h2.request(3, "GET", TestServer.blockPath("default", BlockApiTest.key(5)), true);
      h2.flush();
      assertThat(h2.nextHeaders(3).status().toString()).isEqualTo("200");
    }
  }

  /**
   * The JDK 17 HttpClient ignores a reset after a complete answer and would wait for window until
   * it timed out; the one in JDK 25 takes the answer with the reset. Either gets its answer.
   */
  @Test
  void anHttp2ClientUploadingAnOversizedBlockGetsItsAnswerInsteadOfWaiting() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      HttpClient h2 = HttpClient.newBuilder().version(HttpClient.Version.HTTP_2).build();
      HttpResponse<String> health = h2.send(HttpRequest.newBuilder(server.uri("/health")).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(health.version()).isEqualTo(HttpClient.Version.HTTP_2);
      // more than the connection's and the stream's windows: the client must be told to stop
      byte[] tooLarge = new byte[TestServer.MAX_BLOCK_BYTES + 1];
      HttpResponse<String> put = h2.send(HttpRequest.newBuilder(
                  server.uri(TestServer.blockPath("default", BlockApiTest.key(7))))
              .timeout(Duration.ofSeconds(30))
              .header("content-type", "application/octet-stream")
              .PUT(HttpRequest.BodyPublishers.ofByteArray(tooLarge)).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(put.version()).isEqualTo(HttpClient.Version.HTTP_2);
      assertThat(put.statusCode()).isEqualTo(413);
      assertThat(put.body()).contains("\"error\":\"too-large\"");
    }
  }
}
