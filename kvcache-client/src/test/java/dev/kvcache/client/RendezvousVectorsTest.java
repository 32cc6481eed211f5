package dev.kvcache.client;

import dev.kvcache.spi.Rendezvous;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvcache.BlockKey;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Checks that the Java client places keys on servers exactly as the Python client does: server
 * ids, scores, owners and the whole order of servers in {@code rendezvous-vectors.json}, which
 * {@code docs/tools/rendezvous_vectors.py} writes from the Python implementation (whose tests check
 * the same file).
 */
@Tag("vectors")
class RendezvousVectorsTest {

  @Test
  void serverIdsScoresAndOwnersMatchThePythonClient() throws IOException {
    JsonNode root;
    try (InputStream in = getClass().getResourceAsStream("/rendezvous-vectors.json")) {
      assertThat(in).as("rendezvous-vectors.json on the test classpath").isNotNull();
      root = new ObjectMapper().readTree(in);
    }
    assertThat(root.path("scheme").asText()).isEqualTo("kvcache rendezvous v1");
    int cases = 0;
    for (JsonNode list : root.path("vectors")) {
      List<Long> ids = new ArrayList<>();
      for (int i = 0; i < list.path("servers").size(); i++) {
        String server = list.path("servers").get(i).asText();
        long id = Rendezvous.serverId(server);
        assertThat(hex(id)).as("id of %s", server)
            .isEqualTo(list.path("serverIds").get(i).asText());
        ids.add(id);
      }
      for (JsonNode c : list.path("keys")) {
        BlockKey key = BlockKey.fromHex(c.path("key").asText());
        long[] scores = new long[ids.size()];
        for (int i = 0; i < ids.size(); i++) {
          scores[i] = Rendezvous.score(key, ids.get(i));
          assertThat(hex(scores[i])).as("score of %s on %s", key, list.path("servers").get(i))
              .isEqualTo(c.path("scores").get(i).asText());
        }
        assertThat(Rendezvous.pick(key, ids)).as("owner of %s", key)
            .isEqualTo(c.path("owner").asInt());
        List<Integer> order = IntStream.range(0, ids.size()).boxed()
            .sorted(Comparator.<Integer>comparingLong(i -> scores[i]).reversed()
                .thenComparing(i -> i))
            .toList();
        List<Integer> expected = new ArrayList<>();
        c.path("order").forEach(n -> expected.add(n.asInt()));
        assertThat(order).as("order of servers for %s", key).isEqualTo(expected);
        cases++;
      }
    }
    assertThat(cases).isGreaterThanOrEqualTo(50);
  }

  private static String hex(long v) {
    return String.format("%016x", v);
  }
}
