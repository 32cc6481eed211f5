package dev.kvcache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Checks the Java key derivation against the vectors that the independent Python implementation
 * ({@code docs/tools/key_vectors.py}) wrote to {@code key-vectors.json}.
 */
@Tag("vectors")
class KeyVectorsTest {

  private static JsonNode vectors;

  @BeforeAll
  static void load() throws IOException {
    try (InputStream in = KeyVectorsTest.class.getResourceAsStream("/key-vectors.json")) {
      assertThat(in).as("key-vectors.json on the test classpath").isNotNull();
      JsonNode root = new ObjectMapper().readTree(in);
      assertThat(root.path("scheme").asText()).isEqualTo("kvcache keys v1");
      vectors = root.path("vectors");
    }
    assertThat(vectors.isArray()).isTrue();
    assertThat(vectors.size()).as("namespaces in the vector file").isGreaterThanOrEqualTo(4);
  }

  @Test
  void namespaceDigestsMatch() {
    for (JsonNode v : vectors) {
      Namespace ns = namespace(v);
      assertThat(HexFormat.of().formatHex(ns.digest()))
          .as("digest of %s", ns)
          .isEqualTo(v.path("namespaceDigest").asText());
    }
  }

  @Test
  void rawKeysMatch() {
    int checked = 0;
    for (JsonNode v : vectors) {
      Namespace ns = namespace(v);
      for (JsonNode raw : v.path("raw")) {
        byte[] bytes = HexFormat.of().parseHex(raw.path("rawHex").asText());
        assertThat(BlockKey.ofRaw(ns, bytes).toHex())
            .as("raw key %s in %s", raw.path("rawHex").asText(), ns)
            .isEqualTo(raw.path("key").asText());
        checked++;
      }
    }
    assertThat(checked).isGreaterThanOrEqualTo(12);
  }

  @Test
  void keysOfEngineNamesMatch() {
    int checked = 0;
    for (JsonNode v : vectors) {
      Namespace ns = namespace(v);
      for (JsonNode name : v.path("names")) {
        assertThat(BlockKey.ofRaw(ns, name.path("name").asText()).toHex())
            .as("key of name '%s' in %s", name.path("name").asText(), ns)
            .isEqualTo(name.path("key").asText());
        checked++;
      }
    }
    assertThat(checked).isGreaterThanOrEqualTo(12);
  }

  @Test
  void namesShorterThan128BitsAreRefused() {
    Namespace ns = namespace(vectors.get(0));
    assertThatThrownBy(() -> BlockKey.ofRaw(ns, "fifteen-bytes.."))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("15 bytes");
    assertThatThrownBy(() -> BlockKey.ofRaw(ns, "sixteen-bytes..\uD800"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not valid Unicode");
  }

  @Test
  void prefixKeysMatch() {
    int checked = 0;
    for (JsonNode v : vectors) {
      Namespace ns = namespace(v);
      for (JsonNode p : v.path("prefix")) {
        int blockSize = p.path("blockSizeTokens").asInt();
        int[] tokens = tokens(p);
        List<String> actual = new ArrayList<>();
        for (BlockKey key : PrefixKeys.of(ns, blockSize).keysFor(tokens)) {
          actual.add(key.toHex());
        }
        assertThat(actual)
            .as("keys of %d tokens in blocks of %d in %s", tokens.length, blockSize, ns)
            .isEqualTo(expectedKeys(p));
        checked += actual.size();
      }
    }
    assertThat(checked).as("prefix keys compared").isGreaterThan(20);
  }

  @Test
  void nextChainedFromNullReproducesKeysFor() {
    for (JsonNode v : vectors) {
      Namespace ns = namespace(v);
      for (JsonNode p : v.path("prefix")) {
        int blockSize = p.path("blockSizeTokens").asInt();
        int[] tokens = tokens(p);
        PrefixKeys prefix = PrefixKeys.of(ns, blockSize);
        List<String> chained = new ArrayList<>();
        BlockKey parent = null;
        for (int from = 0; from + blockSize <= tokens.length; from += blockSize) {
          parent = prefix.next(parent, tokens, from);
          chained.add(parent.toHex());
        }
        assertThat(chained)
            .as("next() chain of %d tokens in blocks of %d in %s", tokens.length, blockSize, ns)
            .isEqualTo(expectedKeys(p));
      }
    }
  }

  private static Namespace namespace(JsonNode v) {
    JsonNode n = v.path("namespace");
    return Namespace.of(
        n.path("model").asText(),
        n.path("dtype").asText(),
        n.path("layout").asText(),
        n.path("tenant").asText());
  }

  private static int[] tokens(JsonNode p) {
    JsonNode t = p.path("tokens");
    int[] tokens = new int[t.size()];
    for (int i = 0; i < tokens.length; i++) {
      assertThat(t.get(i).canConvertToInt()).as("token %s fits an int", t.get(i)).isTrue();
      tokens[i] = t.get(i).intValue();
    }
    return tokens;
  }

  private static List<String> expectedKeys(JsonNode p) {
    List<String> keys = new ArrayList<>();
    p.path("keys").forEach(k -> keys.add(k.asText()));
    return keys;
  }
}
