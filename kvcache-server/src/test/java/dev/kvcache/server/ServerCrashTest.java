package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.testkit.TestBytes;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code kill -9} of a server under PUTs, again and again on one directory: the server runs as a
 * child process, four writers PUT blocks of 64 KiB to 512 KiB under new keys, two over HTTP/1.1
 * and two over HTTP/2, and the server is killed at a random moment, 0.3 to 2 s in; every fourth
 * cycle the writers stop after a few PUTs, so that the kill finds the server idle. The next start reads back every block acknowledged before the kill:
 * none may come back with other bytes; under {@code write_through} none may be missing; under
 * {@code write_behind} at most the spill queue's bound ({@code 64} blocks, a quarter of RAM); under
 * {@code ram_first} any number (RAM held them).
 */
@Tag("crash")
@Tag("integration")
class ServerCrashTest {

  private static final int CYCLES = Integer.getInteger("kvcache.serverCrashCycles", 10);
  /** Keys per cycle: more than the writers get through before the kill. */
  private static final int KEYS_PER_CYCLE = 10_000;
  /** Puts in a cycle whose writers finish early, so that the kill finds the server idle. */
  private static final int PUTS_BEFORE_IDLE = 40;
  private static final long RAM_BYTES = 64L << 20;
  private static final int MAX_BLOCK = 512 << 10;

  @TempDir Path temp;

  /** A block acknowledged by the server: its key number, length and seed. */
  private record Acked(long key, int length, long seed) {}

  @ParameterizedTest
  @ValueSource(strings = {"write_through", "write_behind", "ram_first"})
  void acknowledgedPutsSurviveKill9AsTheDurabilityPromises(String durability) throws Exception {
    Path dir = temp.resolve(durability);
    SplittableRandom random = new SplittableRandom(durability.hashCode());
    int cycles = durability.equals("ram_first") ? Math.min(CYCLES, 4) : CYCLES; // nothing to bound
    List<Acked> previous = List.of();
    long lostInAll = 0;
    int readBack = 0;
    for (int cycle = 0; cycle <= cycles; cycle++) {
      try (TestServer server = start(dir, durability)) {
        URI base = server.base;
        int lost = 0;
        for (Acked acked : previous) {
          HttpResponse<byte[]> got = TestServer.http(HttpClient.Version.HTTP_1_1).send(
              HttpRequest.newBuilder(base.resolve(TestServer.blockPath("default", BlockApiTest.key(acked.key()))))
                  .timeout(Duration.ofSeconds(30)).GET().build(),
              HttpResponse.BodyHandlers.ofByteArray());
          if (got.statusCode() == 404) {
            lost++;
            continue;
          }
          assertThat(got.statusCode()).as("cycle %d, block %d", cycle, acked.key()).isEqualTo(200);
          assertThat(got.body()).as("cycle %d, block %d", cycle, acked.key())
              .isEqualTo(TestBytes.random(acked.length(), acked.seed()));
          readBack++;
        }
        switch (durability) {
          case "write_through" -> assertThat(lost).as("acknowledged blocks lost, cycle %d", cycle).isZero();
          case "write_behind" -> assertThat(lost).as("acknowledged blocks lost, cycle %d", cycle)
              .isLessThanOrEqualTo(64);
          default -> { }
        }
        lostInAll += lost;
        if (cycle == cycles) {
          break;
        }
        previous = writeUntilKilled(base, server, cycle, random);
      }
    }
    if (!durability.equals("ram_first")) {
      assertThat(readBack).as("blocks read back after kills").isPositive();
    }
    System.out.printf("%s: %d blocks read back after %d kills, %d lost%n", durability, readBack,
        cycles, lostInAll);
  }

  /** Four writers PUT new blocks until the server is killed, after 0.3 to 2 s; returns the acknowledged. */
  private List<Acked> writeUntilKilled(URI base, TestServer server, int cycle, SplittableRandom random)
      throws Exception {
    ConcurrentLinkedQueue<Acked> acked = new ConcurrentLinkedQueue<>();
    AtomicInteger next = new AtomicInteger();
    int puts = cycle % 4 == 3 ? PUTS_BEFORE_IDLE : KEYS_PER_CYCLE;
    ExecutorService writers = Executors.newFixedThreadPool(4);
    HttpClient h2 = TestServer.http(HttpClient.Version.HTTP_2);
    h2.send(HttpRequest.newBuilder(base.resolve("/health")).build(), // the upgrade, before any body
        HttpResponse.BodyHandlers.discarding());
    for (int w = 0; w < 4; w++) {
      HttpClient client = w < 2 ? TestServer.http(HttpClient.Version.HTTP_1_1) : h2;
      long writerSeed = random.nextLong();
      writers.execute(() -> {
        SplittableRandom sizes = new SplittableRandom(writerSeed);
        for (int n; (n = next.getAndIncrement()) < puts; ) {
          long key = (long) cycle * KEYS_PER_CYCLE + n;
          int length = (64 << 10) + sizes.nextInt(MAX_BLOCK - (64 << 10) + 1);
          long seed = sizes.nextLong();
          try {
            HttpResponse<Void> put = client.send(HttpRequest.newBuilder(
                    base.resolve(TestServer.blockPath("default", BlockApiTest.key(key))))
                .header("Content-Type", "application/octet-stream")
                .timeout(Duration.ofSeconds(30))
                .PUT(HttpRequest.BodyPublishers.ofByteArray(TestBytes.random(length, seed))).build(),
                HttpResponse.BodyHandlers.discarding());
            if (put.statusCode() == 201) {
              acked.add(new Acked(key, length, seed));
            }
          } catch (IOException e) {
            return; // the server is gone
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
          }
        }
      });
    }
    Thread.sleep(300 + random.nextInt(1700));
    server.kill();
    writers.shutdown();
    assertThat(writers.awaitTermination(60, TimeUnit.SECONDS)).isTrue();
    return new ArrayList<>(acked);
  }

  private static TestServer start(Path dir, String durability) throws IOException {
    return TestServer.startChild(Map.of(
        "kvcache.cache.ram-bytes", RAM_BYTES + "B",
        "kvcache.cache.max-block-bytes", MAX_BLOCK + "B",
        "kvcache.cache.disk-dir", dir.toString(),
        "kvcache.cache.disk-capacity", "2GiB",
        "kvcache.cache.disk-min-free", "0B",
        "kvcache.cache.durability", durability));
  }
}
