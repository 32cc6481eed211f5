package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.s3.testkit.InProcessS3;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code docs/metrics.md} lists what {@code /prometheus} exports, no more and no less: every
 * metric family, its type and its labels, and when it is there. A server with RAM alone exports
 * the rows marked {@code always}; one with a disk tier, an object tier below it, {@code
 * kvcache.tokens-per-block}, quotas, a sealed namespace and KV events exports every row.
 */
class MetricsDocTest {

  private static final Path DOC = Path.of("..", "docs", "metrics.md");
  /** When a row's metric is there: the doc's last column. */
  private static final Set<String> WHEN =
      Set.of("always", "lower tier", "disk tier", "object tier", "tokens-per-block", "KV events",
          "quotas", "sealing");
  private static final Pattern ROW = Pattern.compile(
      "^\\| `([a-z0-9_]+\\*?)` \\| (counter|gauge|summary) \\|([^|]*)\\|[^|]+\\|([^|]+)\\|$");
  private static final Pattern TYPE = Pattern.compile("^# TYPE ([a-z0-9_]+) ([a-z]+)$");
  private static final Pattern SAMPLE = Pattern.compile("^([a-z0-9_]+)(?:\\{([^}]*)})? ");
  private static final Pattern LABEL = Pattern.compile("([a-z_]+)=\"");

  @TempDir Path dir;

  /** A row of the doc: a family (or a prefix ending in {@code *}), its type, labels and when. */
  private record Row(String name, String type, Set<String> labels, String when) {
    boolean matches(String family) {
      return name.endsWith("*") ? family.startsWith(name.substring(0, name.length() - 1))
          : name.equals(family);
    }
  }

  /** An exported family: its type and the label names its samples carry. */
  private record Family(String type, Set<String> labels) {}

  private static Map<String, Row> documented() throws IOException {
    Map<String, Row> rows = new LinkedHashMap<>();
    for (String line : Files.readAllLines(DOC, StandardCharsets.UTF_8)) {
      if (!line.startsWith("| `")) {
        continue;
      }
      Matcher m = ROW.matcher(line);
      assertThat(m.matches()).as("a metrics.md row of the form | `name` | type | labels |"
          + " meaning | when |: " + line).isTrue();
      Set<String> labels = new TreeSet<>();
      Matcher label = Pattern.compile("`([a-z_]+)`").matcher(m.group(3));
      while (label.find()) {
        labels.add(label.group(1));
      }
      String when = m.group(4).trim();
      assertThat(WHEN).as("the 'when' of " + m.group(1)).contains(when);
      assertThat(rows.put(m.group(1), new Row(m.group(1), m.group(2), labels, when)))
          .as("one row per metric: " + m.group(1)).isNull();
    }
    assertThat(rows).as("rows in " + DOC).hasSizeGreaterThan(20);
    return rows;
  }

  /** The families {@code /prometheus} exports, a summary's {@code _max} gauge folded into it. */
  private static Map<String, Family> exported(TestServer server) throws Exception {
    String text = server.metrics();
    Map<String, String> types = new TreeMap<>();
    List<String> samples = new ArrayList<>();
    for (String line : text.split("\n")) {
      Matcher t = TYPE.matcher(line);
      if (t.matches()) {
        types.put(t.group(1), t.group(2));
      } else if (!line.startsWith("#") && !line.isBlank()) {
        samples.add(line);
      }
    }
    types.keySet().removeIf(name -> name.endsWith("_max")
        && "summary".equals(types.get(name.substring(0, name.length() - "_max".length()))));
    Map<String, Family> families = new TreeMap<>();
    types.forEach((name, type) -> families.put(name, new Family(type, new TreeSet<>())));
    for (String line : samples) {
      Matcher s = SAMPLE.matcher(line);
      if (!s.find()) {
        continue;
      }
      String family = familyOf(s.group(1), families);
      if (family == null || s.group(2) == null) {
        continue;
      }
      Matcher label = LABEL.matcher(s.group(2));
      while (label.find()) {
        if (!label.group(1).equals("quantile")) {
          families.get(family).labels().add(label.group(1));
        }
      }
    }
    return families;
  }

  private static String familyOf(String sample, Map<String, Family> families) {
    if (families.containsKey(sample)) {
      return sample;
    }
    for (String suffix : List.of("_count", "_sum", "_max")) {
      if (sample.endsWith(suffix)
          && families.containsKey(sample.substring(0, sample.length() - suffix.length()))) {
        return sample.substring(0, sample.length() - suffix.length());
      }
    }
    return null; // a _max gauge of a summary, already folded
  }

  /** A routed request, a put, a get and a lookup, so that lazily made meters are there. */
  private static void exercise(TestServer server) throws Exception {
    String key = BlockApiTest.key(1);
    assertThat(server.put("default", key, new byte[4096]).statusCode()).isEqualTo(201);
    assertThat(server.get("default", key).statusCode()).isEqualTo(200);
    assertThat(server.send(HttpRequest.newBuilder(server.uri("/health"))).statusCode())
        .isEqualTo(200);
  }

  @Test
  void everyExportedMetricIsDocumentedWithItsTypeLabelsAndWhen() throws Exception {
    Map<String, Row> rows = documented();
    try (InProcessS3 s3 = new InProcessS3()) {
      Map<String, String> all = TestServer.objectTier(s3, "", "256MiB");
      all.put("kvcache.tokens-per-block", "default=16");
      all.put("kvcache.events.endpoint", "tcp://127.0.0.1:*");
      all.put("kvcache.quotas.default.ram-bytes", "16MiB");
      all.put("kvcache.sealing.namespaces", "other");
      all.put("kvcache.sealing.master-keys",
          "1:" + java.util.Base64.getEncoder().encodeToString(new byte[32]));
      Map<String, Family> full;
      try (TestServer server = TestServer.start(dir.resolve("full"), all)) {
        exercise(server);
        full = exported(server);
      }
      Map<String, Family> ramOnly;
      try (TestServer server = TestServer.start(dir.resolve("ram"),
          Map.of("kvcache.cache.disk-dir", ""))) {
        exercise(server);
        ramOnly = exported(server);
      }

      for (Map.Entry<String, Family> e : full.entrySet()) {
        String family = e.getKey();
        Row row = rows.values().stream().filter(r -> r.matches(family)).findFirst().orElse(null);
        assertThat(row).as(family + " is exported but not in docs/metrics.md").isNotNull();
        if (!row.name().endsWith("*")) {
          assertThat(row.type()).as("the type of " + family).isEqualTo(e.getValue().type());
          assertThat(row.labels()).as("the labels of " + family)
              .isEqualTo(e.getValue().labels());
        }
      }
      for (Row row : rows.values()) {
        assertThat(full.keySet().stream().anyMatch(row::matches))
            .as(row.name() + " is in docs/metrics.md but a server with every tier exports no"
                + " such metric").isTrue();
        boolean alone = ramOnly.keySet().stream().anyMatch(row::matches);
        assertThat(alone).as(row.name() + " is there with RAM alone: its 'when' should say"
            + (alone ? " always" : " which setting brings it") + ", not '" + row.when() + "'")
            .isEqualTo(row.when().equals("always"));
      }
    }
  }
}
