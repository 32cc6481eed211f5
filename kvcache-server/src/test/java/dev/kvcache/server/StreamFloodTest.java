package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.testkit.TestBytes;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * HTTP/2 clients that open streams faster than they finish them: streams beyond the limit are
 * refused, a rapid-reset flood loses its connection, and everyone else is served throughout.
 */
class StreamFloodTest {

  private static final int MAX_STREAMS = 16;

  @TempDir Path dir;

  private TestServer start() {
    return TestServer.start(dir,
        Map.of("micronaut.server.netty.http2.max-concurrent-streams", MAX_STREAMS));
  }

  /** Reads frames until the server's SETTINGS arrived (and were acknowledged). */
  private static void handshake(RawHttp2 h2) throws Exception {
    RawHttp2.Frame f;
    do {
      f = h2.next();
      assertThat(f).as("the server's SETTINGS").isNotNull();
    } while (f.type() != RawHttp2.SETTINGS || (f.flags() & 1) != 0);
  }

  @Test
  void streamsBeyondTheLimitAreRefusedAndTheRestAreServed() throws Exception {
    try (TestServer server = start();
        RawHttp2 h2 = new RawHttp2(server.server.getHost(), server.server.getPort())) {
      handshake(h2);
      // PUTs whose bodies never come: each stream stays open
      int opened = 3 * MAX_STREAMS;
      for (int i = 0; i < opened; i++) {
        h2.request(1 + 2 * i, "PUT", TestServer.blockPath("default", BlockApiTest.key(i)), false);
      }
      h2.flush();
      int refused = 0;
      for (RawHttp2.Frame f; refused < opened - MAX_STREAMS && (f = h2.next()) != null; ) {
        if (f.type() == RawHttp2.RST_STREAM && f.errorCode() == RawHttp2.REFUSED_STREAM) {
          refused++;
        }
        assertThat(f.type()).as("the connection is not closed").isNotEqualTo(RawHttp2.GOAWAY);
      }
      assertThat(refused).isEqualTo(opened - MAX_STREAMS);

      // other clients are served meanwhile
      byte[] other = TestBytes.random(100_000, 1);
      assertThat(server.put("default", BlockApiTest.key(1000), other).statusCode()).isEqualTo(201);
      assertThat(server.get("default", BlockApiTest.key(1000)).body()).isEqualTo(other);

      // and a stream within the limit, on the flooding connection, still completes
      byte[] block = TestBytes.random(1000, 2);
      h2.data(1, block, true);
      h2.flush();
      RawHttp2.Frame answer;
      do {
        answer = h2.next();
        assertThat(answer).as("an answer on stream 1").isNotNull();
      } while (answer.stream() != 1);
      assertThat(answer.type()).isEqualTo(RawHttp2.HEADERS);
      assertThat(server.get("default", BlockApiTest.key(0)).body()).isEqualTo(block);
    }
  }

  @Test
  void aRapidResetFloodLosesItsConnectionAndNothingStoredIsLost() throws Exception {
    try (TestServer server = start();
        RawHttp2 h2 = new RawHttp2(server.server.getHost(), server.server.getPort())) {
      byte[] kept = TestBytes.random(300_000, 3);
      assertThat(server.put("default", BlockApiTest.key(1), kept).statusCode()).isEqualTo(201);
      handshake(h2);
      // requests that need no cache: the server may still be answering them when the test ends
      String path = "/openapi.yaml";
      int goaway = -1;
      try {
        for (int i = 0; i < 5_000; i++) {
          h2.request(1 + 2 * i, "GET", path, true);
          h2.reset(1 + 2 * i);
        }
        h2.flush();
      } catch (java.io.IOException closedWhileSending) {
        // the server may close the connection before the flood is all written
      }
      for (RawHttp2.Frame f; (f = h2.next()) != null; ) {
        if (f.type() == RawHttp2.GOAWAY) {
          goaway = f.errorCode();
        }
      }
      assertThat(goaway).as("the GOAWAY's error code, after which the server closed the connection")
          .isEqualTo(RawHttp2.ENHANCE_YOUR_CALM);
      assertThat(server.get("default", BlockApiTest.key(1)).body()).isEqualTo(kept);
    }
  }
}
