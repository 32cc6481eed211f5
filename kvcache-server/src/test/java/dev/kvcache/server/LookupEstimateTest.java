package dev.kvcache.server;

import static dev.kvcache.server.BlockApiTest.body;
import static dev.kvcache.server.BlockApiTest.key;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The lookup answer says which tier holds the blocks found and how long reading them should take. */
class LookupEstimateTest {

  private static final int BLOCK = 1 << 20;
  private static final Pattern RUN =
      Pattern.compile("\\{\"tier\":\"(\\w+)\",\"blocks\":(\\d+)(?:,\"load_us\":(\\d+))?}");

  @TempDir Path dir;

  private static HttpResponse<byte[]> lookup(TestServer server, List<String> keys, String pin)
      throws Exception {
    String json = "{\"keys\":[\"" + String.join("\",\"", keys) + "\"]" + pin + "}";
    return server.send(HttpRequest.newBuilder(server.uri("/v1/namespaces/default/lookup"))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json)));
  }

  @Test
  void aLookupAcrossRamAndDiskGivesEachTiersBlocksAndLoadTime() throws Exception {
    try (TestServer server = TestServer.start(dir, Map.of("kvcache.cache.ram-bytes", "8MiB",
        "kvcache.cache.max-block-bytes", "1MiB", "kvcache.cache.durability", "write_through"))) {
      Random random = new Random(7);
      List<String> keys = new ArrayList<>();
      for (int i = 0; i < 16; i++) {
        byte[] block = new byte[BLOCK];
        random.nextBytes(block);
        keys.add(key(i));
        assertThat(server.put("default", key(i), block).statusCode()).isEqualTo(201);
      }
      // reading the first blocks back from disk promotes them, and times the disk's reads; RAM
      // keeps the last ones put, so the chain starts on disk and ends in RAM
      for (int i = 0; i < 4; i++) {
        assertThat(server.get("default", key(i)).statusCode()).isEqualTo(200);
      }

      for (String pin : new String[] {"", ",\"pin_ms\":10000"}) {
        String answer = body(lookup(server, keys, pin));
        assertThat(answer).as(answer).contains("\"present\":16");
        Matcher run = RUN.matcher(answer);
        int blocks = 0;
        long micros = 0;
        List<String> tiers = new ArrayList<>();
        while (run.find()) {
          tiers.add(run.group(1));
          blocks += Integer.parseInt(run.group(2));
          assertThat(run.group(3)).as("every tier here has timed reads: %s", answer).isNotNull();
          micros += Long.parseLong(run.group(3));
        }
        assertThat(blocks).as(answer).isEqualTo(16);
        assertThat(tiers).as(answer).contains("ram", "disk");
        Matcher total = Pattern.compile("],\"load_us\":(\\d+)").matcher(answer);
        assertThat(total.find()).as(answer).isTrue();
        assertThat(Long.parseLong(total.group(1))).as("the sum of the runs, each rounded up")
            .isBetween(micros - tiers.size(), micros);
      }
      assertThat(body(lookup(server, List.of(key(99)), "")))
          .isEqualTo(PinnedLookupTest.NOTHING_FOUND);
    }
  }
}
