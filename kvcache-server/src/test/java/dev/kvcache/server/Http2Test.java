package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.DataInputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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
  void anHttp11ClientCanUpgradeToHttp2() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      byte[] block = BlockApiTest.random(1000, 3);
      server.put("default", BlockApiTest.key(1), block);
      HttpClient h2 = HttpClient.newBuilder().version(HttpClient.Version.HTTP_2).build();
      HttpResponse<byte[]> get = h2.send(HttpRequest.newBuilder(
              server.uri(TestServer.blockPath("default", BlockApiTest.key(1)))).build(),
          HttpResponse.BodyHandlers.ofByteArray());
      assertThat(get.version()).isEqualTo(HttpClient.Version.HTTP_2);
      assertThat(get.body()).isEqualTo(block);
    }
  }
}
