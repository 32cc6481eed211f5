package dev.kvcache.server.events;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The publisher's batches as llm-d's KV-cache indexer reads them: the indexer (llm-d-kv-cache,
 * built from its Go module by {@code routing/llm-d/check.sh} into a probe that scores prompts on
 * request) subscribes to the publisher, and its score for a prompt counts the blocks stored,
 * weighted by their medium, drops when one is removed, and goes when all are cleared.
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
        publisher.offer(TOPIC, new KvEvent.BlockStored(new long[] {hashes[0], hashes[1]}, null, first,
            BLOCK, null, KvEvent.CPU));
        Thread.sleep(200);
        score = probe.score(prompt);
      }
      assertThat(score).as("two blocks in RAM, 0.8 each").isEqualTo("{\"kvcache\":1.6}");
      publisher.offer(TOPIC, new KvEvent.BlockStored(new long[] {hashes[2]}, hashes[1], third, BLOCK,
          null, KvEvent.STORAGE));
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
}
