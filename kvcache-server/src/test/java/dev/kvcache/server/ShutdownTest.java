package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ShutdownTest {

  @TempDir Path dir;

  @Test
  void aPutUnderWayWhenTheServerStopsIsFinishedAndKept() throws Exception {
    byte[] block = BlockApiTest.random(1 << 20, 9);
    String key = BlockApiTest.key(1);
    TestServer server = TestServer.start(dir);
    String answer;
    try (Socket socket = new Socket(server.server.getHost(), server.server.getPort())) {
      socket.setSoTimeout(20_000);
      OutputStream out = socket.getOutputStream();
      out.write(("PUT " + TestServer.blockPath("default", key) + " HTTP/1.1\r\nHost: test\r\n"
          + "Content-Type: application/octet-stream\r\nContent-Length: " + block.length + "\r\n\r\n")
          .getBytes(StandardCharsets.US_ASCII));
      out.write(block, 0, block.length / 2);
      out.flush();
      Thread.sleep(200);

      CompletableFuture<Void> stopping = CompletableFuture.runAsync(server::close);
      Thread.sleep(500);
      assertThat(stopping).as("the stop waits for the request under way").isNotDone();
      out.write(block, block.length / 2, block.length - block.length / 2);
      out.flush();
      byte[] head = new byte[12];
      int n = socket.getInputStream().readNBytes(head, 0, head.length);
      answer = new String(head, 0, n, StandardCharsets.US_ASCII);
      stopping.get();
    }
    assertThat(answer).isEqualTo("HTTP/1.1 201");
    try (TestServer again = TestServer.start(dir)) {
      assertThat(again.get("default", key).body()).isEqualTo(block);
    }
  }
}
