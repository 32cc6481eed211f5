package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ConcurrentClientsTest {

  @TempDir Path dir;

  /** A block's bytes are a function of its key and version, so any read can be checked. */
  static byte[] content(int key, int version) {
    Random r = new Random(key * 1_000_003L + version);
    byte[] b = new byte[4096 + r.nextInt(512 * 1024)];
    r.nextBytes(b);
    ByteBuffer.wrap(b).putInt(key).putInt(version);
    return b;
  }

  @Test
  void concurrentPutsAndGetsNeverSeeForeignOrTornBytes() throws Exception {
    int threads = 8;
    int keys = 40;
    try (TestServer server = TestServer.start(dir)) {
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      List<Future<Integer>> results = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int seed = t;
        results.add(pool.submit(() -> {
          Random r = new Random(seed);
          int checked = 0;
          for (int op = 0; op < 60; op++) {
            int key = r.nextInt(keys);
            if (r.nextBoolean()) {
              int version = r.nextInt(4);
              HttpResponse<byte[]> put =
                  server.put("default", BlockApiTest.key(key), content(key, version));
              assertThat(put.statusCode()).isIn(201, 202);
            } else {
              HttpResponse<byte[]> get = server.get("default", BlockApiTest.key(key));
              if (get.statusCode() == 200) {
                ByteBuffer b = ByteBuffer.wrap(get.body());
                assertThat(b.getInt()).isEqualTo(key);
                assertThat(get.body()).isEqualTo(content(key, b.getInt()));
                checked++;
              } else {
                assertThat(get.statusCode()).isEqualTo(404);
              }
            }
          }
          return checked;
        }));
      }
      int checked = 0;
      for (Future<Integer> f : results) {
        checked += f.get();
      }
      pool.shutdown();
      assertThat(checked).isGreaterThan(50);
    }
  }
}
