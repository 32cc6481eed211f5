package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.testkit.TestBytes;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bodies their clients give up on halfway, by the hundred, as slowloris and rapid-reset floods do:
 * each frees what it had reserved, and none is logged as a server error (the server did nothing
 * wrong); clients that behave are served throughout.
 */
class AbortedBodiesTest {

  @TempDir Path dir;

  @Test
  void abandonedBodiesLeaveNoErrorsAndNoReservedRoom() throws Exception {
    PrintStream stderr = System.err;
    ByteArrayOutputStream logged = new ByteArrayOutputStream();
    try (TestServer server = TestServer.start(dir)) {
      long idle = server.ramBytesUsed();
      System.setErr(new PrintStream(logged, true, StandardCharsets.UTF_8));
      byte[] half = new byte[32 << 10];
      for (int round = 0; round < 50; round++) {
        // HTTP/1.1: a PUT whose connection closes halfway through its body
        try (Socket socket = new Socket(server.server.getHost(), server.server.getPort())) {
          OutputStream out = socket.getOutputStream();
          out.write(("PUT " + TestServer.blockPath("default", BlockApiTest.key(round))
              + " HTTP/1.1\r\nHost: test\r\nContent-Type: application/octet-stream\r\n"
              + "Content-Length: " + (2 * half.length) + "\r\n\r\n")
              .getBytes(StandardCharsets.US_ASCII));
          out.write(half);
          out.flush();
        }
        // HTTP/2: streams reset halfway through their bodies, with and without a length
        try (RawHttp2 h2 = new RawHttp2(server.server.getHost(), server.server.getPort())) {
          for (int s = 0; s < 4; s++) {
            int stream = 1 + 2 * s;
            String path = TestServer.blockPath("default", BlockApiTest.key(1000 + 4 * round + s));
            if (s % 2 == 0) {
              h2.request(stream, "PUT", path, false, "content-length", Integer.toString(2 * half.length));
            } else {
              h2.request(stream, "PUT", path, false);
            }
            h2.data(stream, new byte[16 << 10], false);
            h2.reset(stream);
          }
          h2.flush();
        }
      }
      byte[] block = TestBytes.random(96 << 10, 1); // whole pages: RAM holds it in as many bytes
      assertThat(server.put("default", BlockApiTest.key(5000), block).statusCode()).isEqualTo(201);
      assertThat(server.get("default", BlockApiTest.key(5000)).body()).isEqualTo(block);
      server.awaitRamBytesUsed(idle + block.length);
    } finally {
      System.setErr(stderr);
    }
    String log = logged.toString(StandardCharsets.UTF_8);
    assertThat(log.lines().filter(l -> l.contains(" ERROR ") || l.contains(" WARN ")))
        .as("errors and warnings logged").isEmpty();
  }
}
