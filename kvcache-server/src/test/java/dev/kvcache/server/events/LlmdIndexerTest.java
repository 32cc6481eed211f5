package dev.kvcache.server.events;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.s3.testkit.InProcessS3;
import dev.kvcache.server.TestServer;
import dev.kvcache.wire.Wire;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The publisher's batches as llm-d's KV-cache indexer reads them: the indexer (llm-d-kv-cache,
 * built from its Go module by {@code routing/llm-d/check.sh} into a probe that scores prompts on
 * request) subscribes to the publisher, and its score for a prompt counts the blocks stored,
 * weighted by their medium, drops when one is removed, and goes when all are cleared. Then the same
 * through a running server: blocks PUT with their engine block score as they reach RAM, and stop
 * scoring when deleted or evicted; blocks evicted into the object tier score by its medium, and
 * stop when their namespace is dropped from the bucket.
 *
 * <p>Runs in the routing stage, which builds the probe and names it in {@code kvcache.llmd.probe};
 * without it the test fails and says so.
 */
@Tag("llm-d")
class LlmdIndexerTest {

  private static final String MODEL = "llama-3.1-8b";
  private static final String TOPIC = "kv@kvcache@" + MODEL;
  private static final int BLOCK = 16;

  /** The probe: the indexer, fed by the publisher, asked for scores on its standard input. */
  private static final class Probe implements AutoCloseable {
    final Process process;
    final PrintWriter in;
    final BufferedReader out;

    Probe(String endpoint) throws IOException {
      String path = System.getProperty("kvcache.llmd.probe", "");
      assertThat(path).as("kvcache.llmd.probe names the llm-d probe (routing/llm-d/check.sh"
          + " builds it)").isNotEmpty();
      assertThat(Files.isExecutable(Path.of(path))).as(path + " is executable").isTrue();
      process = new ProcessBuilder(path, "-endpoint", endpoint, "-block-tokens",
          Integer.toString(BLOCK)).redirectError(ProcessBuilder.Redirect.INHERIT).start();
      in = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
      out = new BufferedReader(new InputStreamReader(process.getInputStream(),
          StandardCharsets.UTF_8));
      assertThat(out.readLine()).isEqualTo("ready");
    }

    /** Sends one command and reads its one-line answer. */
    String ask(String command) throws IOException {
      in.println(command);
      return out.readLine();
    }

    String score(int[] prompt) throws IOException {
      in.println("score " + MODEL + " " + Arrays.stream(prompt).mapToObj(Integer::toString)
          .collect(Collectors.joining(",")));
      return out.readLine();
    }

    /** Asks until the score is {@code expected}, the indexer taking events as they come. */
    String awaitScore(int[] prompt, String expected) throws Exception {
      String score = null;
      for (int i = 0; i < 100 && !expected.equals(score); i++) {
        Thread.sleep(100);
        score = score(prompt);
      }
      return score;
    }

    /** Asks until the pod's score is {@code expected} (to 1e-9), then answers the score. */
    double awaitScore(int[] prompt, double expected) throws Exception {
      double score = Double.NaN;
      for (int i = 0; i < 100 && !(Math.abs(score - expected) < 1e-9); i++) {
        Thread.sleep(100);
        String answer = score(prompt);
        score = answer.equals("{}") ? 0 : Double.parseDouble(
            answer.replaceAll("^\\{\"kvcache\":([^}]+)}$", "$1"));
      }
      return score;
    }

    @Override
    public void close() throws InterruptedException {
      in.println("quit");
      if (!process.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
    }
  }

  @Test
  void theIndexerScoresThePromptsBlocksAsThePublisherTellsThem() throws Exception {
    int[] prompt = IntStream.range(0, 4 * BLOCK + 5).map(i -> 500 + 3 * i).toArray();
    long[] hashes = {0x1111L, 0x2222L, 0xfedcba9876543210L}; // small ones too, in 8 bytes
    try (KvEventPublisher publisher = new KvEventPublisher("tcp://127.0.0.1:*", null, 1000, 100, 1000, Duration.ofMillis(5));
        Probe probe = new Probe(publisher.endpoint())) {
      // two blocks in RAM, then one on disk that follows them: the score is their weights' sum
      int[] first = Arrays.copyOfRange(prompt, 0, 2 * BLOCK);
      int[] third = Arrays.copyOfRange(prompt, 2 * BLOCK, 3 * BLOCK);
      String score = "{}";
      for (int i = 0; i < 50 && score.equals("{}"); i++) { // again until the subscription is up
        publisher.offer(TOPIC, new KvEvent.BlockStored(new long[] {hashes[0], hashes[1]}, null,
            first, BLOCK, null, KvEvent.CPU));
        Thread.sleep(200);
        score = probe.score(prompt);
      }
      assertThat(score).as("two blocks in RAM, 0.8 each").isEqualTo("{\"kvcache\":1.6}");
      publisher.offer(TOPIC, new KvEvent.BlockStored(new long[] {hashes[2]}, hashes[1], third,
          BLOCK, null, KvEvent.STORAGE));
      // llm-d weighs CPU 0.8 and a medium it has no weight for as 1.0
      assertThat(probe.awaitScore(prompt, "{\"kvcache\":2.6}")).isEqualTo("{\"kvcache\":2.6}");
      int[] other = prompt.clone();
      other[0]++;
      assertThat(probe.score(other)).as("another prompt").isEqualTo("{}");

      publisher.offer(TOPIC, new KvEvent.BlockRemoved(new long[] {hashes[1]}, KvEvent.CPU));
      assertThat(probe.awaitScore(prompt, "{\"kvcache\":0.8}")).isEqualTo("{\"kvcache\":0.8}");

      publisher.offer(TOPIC, new KvEvent.AllBlocksCleared());
      assertThat(probe.awaitScore(prompt, "{}")).isEqualTo("{}");
    }
  }

  @TempDir Path dir;

  /** PUTs block {@code index} of {@code prompt}, naming its engine block; the status. */
  private static int putBlock(TestServer server, int[] prompt, int index) throws Exception {
    String tokens = Arrays.stream(prompt, index * BLOCK, (index + 1) * BLOCK)
        .mapToObj(Integer::toString).collect(Collectors.joining(","));
    HttpRequest.Builder put = HttpRequest.newBuilder(server.uri(TestServer.blockPath("default",
            String.format("%032x", 0xabc00 + index))))
        .header("Content-Type", "application/octet-stream")
        .header(Wire.ENGINE_HASH, Long.toString(5000 + index))
        .header(Wire.ENGINE_MODEL, MODEL)
        .header(Wire.ENGINE_TOKENS, tokens)
        .PUT(HttpRequest.BodyPublishers.ofByteArray(new byte[1 << 20]));
    if (index > 0) {
      put.header(Wire.ENGINE_PARENT, Long.toString(5000 + index - 1));
    }
    return server.send(put).statusCode();
  }

  /**
   * PUTs the prompt's first block until the indexer scores the prompt (its subscription takes a
   * moment to join); the score.
   */
  private static String putFirstBlock(TestServer server, Probe probe, int[] prompt)
      throws Exception {
    String score = "{}";
    for (int i = 0; i < 50 && score.equals("{}"); i++) {
      assertThat(putBlock(server, prompt, 0)).isEqualTo(201);
      Thread.sleep(200);
      score = probe.score(prompt);
    }
    return score;
  }

  @Test
  void theIndexerScoresWhatARunningServerHoldsAsItsBlocksComeAndGo() throws Exception {
    int[] prompt = IntStream.range(0, 3 * BLOCK).map(i -> 700 + 5 * i).toArray();
    Map<String, Object> settings = Map.of("kvcache.cache.disk-dir", "",
        "kvcache.cache.ram-bytes", "4MiB", "kvcache.cache.max-block-bytes", "1MiB",
        "kvcache.events.endpoint", "tcp://127.0.0.1:*", "kvcache.events.pool", "kvcache",
        "kvcache.events.interval", "5ms");
    try (TestServer server = TestServer.start(dir, settings);
        Probe probe = new Probe(server.bean(KvEventFeed.class).publisher().endpoint())) {
      assertThat(putFirstBlock(server, probe, prompt)).as("the first block, in RAM")
          .isEqualTo("{\"kvcache\":0.8}");
      assertThat(putBlock(server, prompt, 1)).isEqualTo(201);
      assertThat(putBlock(server, prompt, 2)).isEqualTo(201);
      assertThat(probe.awaitScore(prompt, 2.4)).as("three blocks in RAM").isCloseTo(2.4,
          org.assertj.core.data.Offset.offset(1e-9));

      assertThat(server.send(HttpRequest.newBuilder(server.uri(TestServer.blockPath("default",
          String.format("%032x", 0xabc00 + 2)))).DELETE()).statusCode()).isEqualTo(204);
      assertThat(probe.awaitScore(prompt, 1.6)).as("the third deleted").isCloseTo(1.6,
          org.assertj.core.data.Offset.offset(1e-9));

      for (int i = 0; i < 6; i++) { // 6 MiB of other blocks through 4 MiB of RAM evict the prompt's
        assertThat(server.put("default", String.format("%032x", 0xdef00 + i), new byte[1 << 20])
            .statusCode()).isEqualTo(201);
      }
      assertThat(probe.awaitScore(prompt, "{}")).as("evicted").isEqualTo("{}");
    }
  }

  @Test
  void blocksMovedIntoTheBucketScoreThereUntilTheirNamespaceIsDropped() throws Exception {
    int[] prompt = IntStream.range(0, 2 * BLOCK).map(i -> 1100 + 3 * i).toArray();
    try (InProcessS3 s3 = new InProcessS3()) {
      Map<String, String> settings = TestServer.objectTier(s3, "llmd/", "64MiB");
      settings.putAll(Map.of("kvcache.cache.disk-dir", "", "kvcache.cache.ram-bytes", "4MiB",
          "kvcache.cache.max-block-bytes", "1MiB", "kvcache.events.endpoint", "tcp://127.0.0.1:*",
          "kvcache.events.pool", "kvcache", "kvcache.events.interval", "5ms"));
      try (TestServer server = TestServer.start(dir, settings);
          Probe probe = new Probe(server.bean(KvEventFeed.class).publisher().endpoint())) {
        assertThat(putFirstBlock(server, probe, prompt)).isEqualTo("{\"kvcache\":0.8}");
        assertThat(putBlock(server, prompt, 1)).isEqualTo(201);
        assertThat(probe.awaitScore(prompt, 1.6)).as("two blocks in RAM").isCloseTo(1.6,
            org.assertj.core.data.Offset.offset(1e-9));

        for (int i = 0; i < 6; i++) { // RAM evicts the prompt's blocks, which spill to the bucket
          assertThat(server.put("default", String.format("%032x", 0xdef00 + i),
              new byte[1 << 20]).statusCode()).isEqualTo(201);
        }
        // llm-d weighs a medium it has no weight for (the bucket's SHARED) as 1.0
        assertThat(probe.awaitScore(prompt, 2.0)).as("both in the bucket alone").isCloseTo(2.0,
            org.assertj.core.data.Offset.offset(1e-9));

        assertThat(server.send(HttpRequest.newBuilder(
            server.uri(Wire.NAMESPACES + "default/objects")).DELETE()).statusCode())
            .isEqualTo(200);
        assertThat(probe.awaitScore(prompt, "{}")).as("the namespace dropped from the bucket")
            .isEqualTo("{}");
      }
    }
  }

  @Test
  void anIndexerThatWasAwayGetsWhatItMissedFromTheReplaySocket() throws Exception {
    int[] prompt = IntStream.range(0, 3 * BLOCK).map(i -> 900 + 7 * i).toArray();
    Map<String, Object> settings = Map.of("kvcache.cache.disk-dir", "",
        "kvcache.events.endpoint", "tcp://127.0.0.1:*",
        "kvcache.events.replay-endpoint", "tcp://127.0.0.1:*", "kvcache.events.pool", "kvcache",
        "kvcache.events.interval", "5ms");
    try (TestServer server = TestServer.start(dir, settings)) {
      KvEventPublisher publisher = server.bean(KvEventFeed.class).publisher();
      try (Probe probe = new Probe(publisher.endpoint())) {
        assertThat(putFirstBlock(server, probe, prompt)).isEqualTo("{\"kvcache\":0.8}");
        assertThat(putBlock(server, prompt, 1)).isEqualTo(201);
        assertThat(probe.awaitScore(prompt, 1.6)).isCloseTo(1.6,
            org.assertj.core.data.Offset.offset(1e-9));

        assertThat(probe.ask("unsubscribe")).isEqualTo("ok");
        Thread.sleep(300); // its socket closes behind the answer
        assertThat(putBlock(server, prompt, 2)).isEqualTo(201); // told while no one listens
        Thread.sleep(500);
        assertThat(probe.score(prompt)).as("missed").isEqualTo("{\"kvcache\":1.6}");

        assertThat(probe.ask("subscribe")).isEqualTo("ok");
        assertThat(Integer.parseInt(probe.ask("replay " + publisher.replayEndpoint() + " 0")))
            .as("batches replayed").isPositive();
        assertThat(probe.awaitScore(prompt, 2.4)).as("what was missed, replayed").isCloseTo(2.4,
            org.assertj.core.data.Offset.offset(1e-9));
      }
    }
  }
}
