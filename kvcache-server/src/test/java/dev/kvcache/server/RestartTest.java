package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RestartTest {

  @TempDir Path dir;

  @Test
  void blocksPutBeforeAStopAreServedAfterARestart() throws Exception {
    byte[][] blocks = new byte[20][];
    Random random = new Random(1);
    try (TestServer server = TestServer.start(dir)) {
      for (int i = 0; i < blocks.length; i++) {
        blocks[i] = new byte[1 + random.nextInt(1 << 20)];
        random.nextBytes(blocks[i]);
        assertThat(server.put("default", BlockApiTest.key(i), blocks[i]).statusCode()).isEqualTo(201);
      }
    }
    try (TestServer server = TestServer.start(dir)) {
      for (int i = 0; i < blocks.length; i++) {
        assertThat(server.get("default", BlockApiTest.key(i)).body()).as("block %d", i)
            .isEqualTo(blocks[i]);
      }
    }
  }
}
