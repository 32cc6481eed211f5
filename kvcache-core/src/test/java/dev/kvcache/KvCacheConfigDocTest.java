package dev.kvcache;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.spi.TierSettings;
import dev.kvcache.tiered.StackedTierConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The table of settings in {@link KvCacheConfig}'s Javadoc against the code: it lists every key the
 * parser reads and no other, and a default it gives as a value is the one the code applies.
 */
class KvCacheConfigDocTest {

  private static final Path SOURCE =
      Path.of("src", "main", "java", "dev", "kvcache", "KvCacheConfig.java");
  private static final Path TIERED = Path.of("src", "main", "java", "dev", "kvcache", "tiered");
  private static final Pattern ROW = Pattern.compile(
      "<tr><td>\\{@code ([^}]+)}</td><td>.*?</td><td>(.*?)</td></tr>", Pattern.DOTALL);
  /** A key the parser reads, as a literal in its source. */
  private static final Pattern READ = Pattern.compile("\"(ram\\.[a-z-]+|lower)\"");
  /** A key a group's reader reads ({@code TieredCacheConfig.read}, {@code StackedTierConfig.read}). */
  private static final Pattern READ_IN_GROUP =
      Pattern.compile("settings\\.(?:integer|duration|bool|choice)\\(\"([a-z-]+)\"");

  private static String source() throws IOException {
    // the Javadoc without its line prefixes, so that a row may run over lines
    return Files.readString(SOURCE, StandardCharsets.UTF_8).replaceAll("\n \\*\\s+", " ");
  }

  /** The table's rows: key to default, with {@code {@code x}} unwrapped. */
  private static Map<String, String> rows() throws IOException {
    Map<String, String> rows = new TreeMap<>();
    Matcher m = ROW.matcher(source());
    while (m.find()) {
      rows.put(m.group(1), m.group(2).replaceAll("\\{@code ([^}]*)}", "$1").strip());
    }
    assertThat(rows).as("rows of KvCacheConfig's settings table").hasSizeGreaterThan(10);
    return rows;
  }

  @Test
  void theTableListsEveryKeyTheParserReads() throws IOException {
    Set<String> read = new TreeSet<>();
    Matcher m = READ.matcher(Files.readString(SOURCE, StandardCharsets.UTF_8));
    while (m.find()) {
      read.add(m.group(1));
    }
    for (String group : new String[] {"tiered", "stacked"}) {
      String reader = group.equals("tiered") ? "TieredCacheConfig.java" : "StackedTierConfig.java";
      Matcher g = READ_IN_GROUP.matcher(
          Files.readString(TIERED.resolve(reader), StandardCharsets.UTF_8));
      while (g.find()) {
        read.add(group + "." + g.group(1));
      }
    }
    Set<String> documented = new TreeSet<>(rows().keySet());
    documented.remove("<kind>.*");
    assertThat(documented).isEqualTo(read);
  }

  @Test
  void theTablesDefaultsAreTheCodes() throws IOException {
    Map<String, String> given = new HashMap<>();
    Map<String, String> stacked = new HashMap<>();
    rows().forEach((key, value) -> {
      if (value.matches("[0-9A-Za-z_]+") && !value.equals("none")) { // a value, not words
        (key.startsWith("stacked.") ? stacked : given).put(key, value);
      }
    });
    assertThat(given).containsKeys("ram.bytes", "ram.policy", "tiered.durability");
    KvCacheConfig documented = KvCacheConfig.of(given);
    KvCacheConfig applied = KvCacheConfig.of(Map.of());
    assertThat(documented.ramBytes()).as("ram.bytes").isEqualTo(applied.ramBytes());
    assertThat(documented.ramPolicy()).as("ram.policy").isEqualTo(applied.ramPolicy());
    assertThat(documented.tiered()).as("tiered.*").isEqualTo(applied.tiered());

    // stacked.* is read only over two lower tiers, which need tier modules: read it alone
    TierSettings s = TierSettings.of(stacked);
    StackedTierConfig defaults = StackedTierConfig.defaults();
    assertThat(s.integer("stacked.upload-queue-blocks", -1))
        .isEqualTo(defaults.uploadQueueBlocks());
    assertThat(s.integer("stacked.upload-threads", -1)).isEqualTo(defaults.uploadThreads());
    assertThat(s.duration("stacked.close-wait", null)).isEqualTo(defaults.closeWait());
    assertThat(s.choice("stacked.upload", StackedTierConfig.Upload.class, null))
        .isEqualTo(defaults.upload());
    s.requireAllRead();
  }
}
