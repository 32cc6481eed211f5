package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.server.access.NamespaceSettings;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The settings table of {@code docs/server.md} against the code: every {@code kvcache.*} setting
 * the server reads, but the cache's ({@code kvcache.cache.*}, in {@code docs/settings.md}), is in
 * the table, every setting in the table is one the server reads, and a
 * default the table gives as a literal is the code's. The code's settings are the defaults of
 * {@code @Value("${kvcache...:default}")} in the server's sources, the fields of {@link
 * CacheSettings} and {@link NamespaceSettings}, and the embedded {@code application.yml}.
 */
class SettingsDocTest {

  private static final Path DOC = Path.of("..", "docs", "server.md");
  private static final Pattern ROW = Pattern.compile("^\\| `([a-z0-9.<>*-]+)` \\| ([^|]*) \\|");

  /** The settings of the table, by name: their default as the table gives it. */
  private static Map<String, String> documented() throws IOException {
    String text = Files.readString(DOC, StandardCharsets.UTF_8);
    String table = text.substring(text.indexOf("## Settings"), text.indexOf("## Durability"));
    Map<String, String> rows = new TreeMap<>();
    for (String line : table.split("\n")) {
      Matcher m = ROW.matcher(line);
      if (m.find()) {
        assertThat(rows.put(m.group(1), m.group(2).strip())).as("one row for " + m.group(1))
            .isNull();
      }
    }
    assertThat(rows).as("rows of the settings table").hasSizeGreaterThan(20);
    return rows;
  }

  @Test
  void theTableListsEverySettingWithTheCodesDefault() throws Exception {
    Map<String, String> rows = documented();
    Map<String, String> code = ServerSettings.inCode(Path.of("."));
    for (Map.Entry<String, String> e : code.entrySet()) {
      String name = e.getKey();
      if (name.startsWith("kvcache.cache.")) {
        continue; // the cache's settings: docs/settings.md, which SettingsTableTest checks
      }
      if (name.startsWith("kvcache.")) {
        assertThat(rows).as(name + " is read by the server but not in server.md's settings")
            .containsKey(name);
      }
      String doc = rows.get(name);
      if (doc != null && doc.startsWith("`") && doc.endsWith("`")) {
        assertThat(doc.substring(1, doc.length() - 1)).as("the default of " + name)
            .isEqualTo(e.getValue());
      } else if (doc != null && !e.getValue().isEmpty()) {
        assertThat(doc).as("the default of " + name + " given in words, where the code has '"
            + e.getValue() + "'").doesNotContain("`");
      }
    }
    for (String name : rows.keySet()) {
      boolean group = name.contains("<") || name.endsWith("*");
      boolean known = code.containsKey(name) || group
          || name.startsWith("micronaut.") && !name.startsWith("micronaut.server.netty.http2");
      assertThat(known).as(name + " is in server.md's settings but the server reads no such"
          + " setting").isTrue();
    }
  }
}
