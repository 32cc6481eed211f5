package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.Namespace;
import dev.kvcache.PrefixKeys;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A lookup by a prompt's tokens, as a router that holds tokens and not keys asks: the server
 * derives each full block's key as {@link PrefixKeys} does under the namespace the request names,
 * and answers as a lookup by those keys, per tier and pinned if asked.
 */
class LookupByTokensTest {

  private static final int BLOCK_TOKENS = 16;
  private static final Namespace LLAMA = Namespace.of("llama-3.1-8b", "bf16", "tp0of1", "team-a");
  private static final String KEY_NAMESPACE =
      "{\"model\":\"llama-3.1-8b\",\"dtype\":\"bf16\",\"layout\":\"tp0of1\",\"tenant\":\"team-a\"}";

  @TempDir Path dir;

  private static HttpResponse<byte[]> lookup(TestServer server, String json) throws Exception {
    return server.send(HttpRequest.newBuilder(server.uri("/v1/namespaces/default/lookup"))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json)));
  }

  private static String byTokens(int[] tokens, String keyNamespace, String more) {
    return "{\"tokens\":" + Arrays.toString(tokens).replace(" ", "") + ",\"block_tokens\":"
        + BLOCK_TOKENS + ",\"key_namespace\":" + keyNamespace + more + "}";
  }

  private static String body(HttpResponse<byte[]> answer) {
    return new String(answer.body(), StandardCharsets.UTF_8);
  }

  @Test
  void aPromptsTokensFindTheBlocksStoredUnderTheirKeys() throws Exception {
    int[] tokens = IntStream.range(0, 5 * BLOCK_TOKENS + 7).map(i -> 1000 + i * 7).toArray();
    List<BlockKey> keys = PrefixKeys.of(LLAMA, BLOCK_TOKENS).keysFor(tokens);
    assertThat(keys).hasSize(5); // the partial last block has no key
    try (TestServer server = TestServer.start(dir)) {
      Random random = new Random(3);
      byte[][] blocks = new byte[3][64 << 10];
      for (int i = 0; i < 3; i++) { // the first three blocks of the prompt
        random.nextBytes(blocks[i]);
        assertThat(server.put("default", keys.get(i).toHex(), blocks[i]).statusCode())
            .isEqualTo(201);
      }

      String answer = body(lookup(server, byTokens(tokens, KEY_NAMESPACE, "")));
      assertThat(answer).contains("\"present\":3", "{\"tier\":\"ram\",\"blocks\":3");
      String byKeys = body(lookup(server, "{\"keys\":[" + keys.stream()
          .map(k -> "\"" + k.toHex() + "\"").collect(Collectors.joining(",")) + "]}"));
      assertThat(answer).as("the same answer as by the keys").isEqualTo(byKeys);

      String otherTenant = KEY_NAMESPACE.replace("team-a", "team-b");
      assertThat(body(lookup(server, byTokens(tokens, otherTenant, ""))))
          .isEqualTo(PinnedLookupTest.NOTHING_FOUND);
      int[] changed = tokens.clone();
      changed[BLOCK_TOKENS + 3]++; // the second block differs: only the first is found
      assertThat(body(lookup(server, byTokens(changed, KEY_NAMESPACE, ""))))
          .contains("\"present\":1");

      String pinned = body(lookup(server, byTokens(tokens, KEY_NAMESPACE, ",\"pin_ms\":10000")));
      Matcher lease = Pattern.compile("\"lease\":\"([^\"]+)\"").matcher(pinned);
      assertThat(lease.find()).as(pinned).isTrue();
      HttpResponse<byte[]> second = server.send(HttpRequest.newBuilder(
          server.uri("/v1/namespaces/default/leases/" + lease.group(1) + "/blocks/1")));
      assertThat(second.statusCode()).isEqualTo(200);
      assertThat(second.body()).isEqualTo(blocks[1]);
    }
  }

  @Test
  void aLookupByTokensThatCannotBeMadeIsRefusedWithItsReason() throws Exception {
    int[] tokens = IntStream.range(0, 2 * BLOCK_TOKENS).toArray();
    String keys = "{\"keys\":[\"" + "00".repeat(16) + "\"],\"tokens\":[1]}";
    String[][] cases = {
        {keys, "by 'keys' or by 'tokens', not both"},
        {"{\"tokens\":[1,2,3],\"key_namespace\":" + KEY_NAMESPACE + "}", "'block_tokens'"},
        {"{\"tokens\":[1,2,3],\"block_tokens\":16,\"key_namespace\":" + KEY_NAMESPACE + "}",
            "less than one block of 16"},
        {"{\"tokens\":[1,2,3],\"block_tokens\":1}", "'key_namespace'"},
        {byTokens(tokens, "{\"model\":\"llama\",\"dtype\":\"bf16\"}", ""), "key_namespace:"},
        {"{}", "'keys' list"},
    };
    try (TestServer server = TestServer.start(dir)) {
      for (String[] c : cases) {
        HttpResponse<byte[]> answer = lookup(server, c[0]);
        assertThat(answer.statusCode()).as(c[0]).isEqualTo(400);
        assertThat(body(answer)).as(c[0]).contains("bad-lookup", c[1]);
      }
    }
  }
}
