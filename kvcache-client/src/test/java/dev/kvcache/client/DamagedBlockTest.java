package dev.kvcache.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.PutStatus;
import dev.kvcache.server.TestServer;
import dev.kvcache.testkit.Payloads;
import java.io.RandomAccessFile;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bytes damaged where the server keeps them (its RAM, here in shared memory, written over by
 * another process) never reach the caller's buffer: every read checks each block against the
 * CRC32C it was stored with, reads it again once, then counts it as a miss.
 */
class DamagedBlockTest {

  private static final int BLOCK = 300 << 10;

  @TempDir Path dir;
  @TempDir Path shm;

  /** Flips one byte of {@code key}'s block in the server's RAM file, found by a pinned lookup. */
  private static void damage(TestServer server, BlockKey key, int at) throws Exception {
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    String answer = http.send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + server.port() + "/v1/namespaces/default/lookup"))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString("{\"keys\":[\"" + key.toHex()
                + "\"],\"pin_ms\":1000,\"shared_memory\":true}")).build(),
        HttpResponse.BodyHandlers.ofString()).body();
    Matcher m = Pattern.compile("\"file\":\"([^\"]+)\",\"offset\":(\\d+)").matcher(answer);
    assertThat(m.find()).as(answer).isTrue();
    try (RandomAccessFile f = new RandomAccessFile(m.group(1), "rw")) {
      long where = Long.parseLong(m.group(2)) + at;
      f.seek(where);
      int b = f.read();
      f.seek(where);
      f.write(b ^ 0x20);
    }
  }

  @Test
  void aBlockDamagedInTheServersMemoryIsAMissOnEveryReadAndNeverFillsTheBuffer() throws Exception {
    try (TestServer server = TestServer.start(null,
            Map.of("kvcache.cache.ram-shared-memory-dir", shm.toString()));
        RemoteTier remote = new RemoteTier(RemoteTierConfig.builder()
            .server("127.0.0.1", server.port()).maxBlockBytes(8 << 20).build())) {
      List<BlockKey> keys = List.of(Payloads.key(1), Payloads.key(2), Payloads.key(3));
      for (BlockKey k : keys) {
        assertThat(remote.put(k, Payloads.of(k, 1, BLOCK))).isEqualTo(PutStatus.STORED);
      }
      damage(server, keys.get(1), BLOCK / 2);

      List<ByteBuffer> dsts = List.of(ByteBuffer.allocateDirect(BLOCK),
          ByteBuffer.allocateDirect(BLOCK), ByteBuffer.allocateDirect(BLOCK));
      assertThat(remote.getAllInto(keys, dsts))
          .containsExactly(GetStatus.HIT, GetStatus.MISS, GetStatus.HIT);
      assertThat(dsts.get(1).position()).as("the damaged block is not reported read").isZero();
      assertThat(Payloads.verify(keys.get(0), dsts.get(0).flip())).isEqualTo(1);
      assertThat(Payloads.verify(keys.get(2), dsts.get(2).flip())).isEqualTo(1);
      assertThat(remote.damagedBlocks()).isEqualTo(1);

      ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
      assertThat(remote.getInto(keys.get(1), dst)).isEqualTo(GetStatus.MISS);
      assertThat(dst.position()).isZero();
      try (BlockLease lease = remote.get(keys.get(1))) {
        assertThat(lease.status()).isEqualTo(GetStatus.MISS);
      }
      assertThat(remote.damagedBlocks()).isEqualTo(3);

      // a block stored again over the damaged one reads whole
      assertThat(remote.put(keys.get(1), Payloads.of(keys.get(1), 2, BLOCK)))
          .isEqualTo(PutStatus.STORED);
      assertThat(remote.getInto(keys.get(1), dst)).isEqualTo(GetStatus.HIT);
      assertThat(Payloads.verify(keys.get(1), dst.flip())).isEqualTo(2);
    }
  }
}
