package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.Yaml;

/**
 * The settings table of {@code docs/server.md} against the code: every {@code kvcache.*} setting
 * the server reads is in the table, every setting in the table is one the server reads, and a
 * default the table gives as a literal is the code's. The code's settings are the defaults of
 * {@code @Value("${kvcache...:default}")} in the server's sources, the fields of {@link
 * CacheSettings} and {@link NamespaceSettings}, and the embedded {@code application.yml}.
 */
class SettingsDocTest {

  private static final Path DOC = Path.of("..", "docs", "server.md");
  private static final Path SOURCES = Path.of("src", "main", "java");
  private static final Pattern ROW = Pattern.compile("^\\| `([a-z0-9.<>*-]+)` \\| ([^|]*) \\|");
  private static final Pattern VALUE = Pattern.compile("\\$\\{(kvcache\\.[a-z0-9.-]+):([^}]*)}");

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
    assertThat(rows).as("rows of the settings table").hasSizeGreaterThan(30);
    return rows;
  }

  /** The settings the server reads, by name: their default (empty where there is none). */
  private static Map<String, String> inCode() throws Exception {
    Map<String, String> settings = new TreeMap<>();
    try (Stream<Path> files = Files.walk(SOURCES)) {
      for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".java"))::iterator) {
        Matcher m = VALUE.matcher(Files.readString(f, StandardCharsets.UTF_8));
        while (m.find()) {
          String before = settings.put(m.group(1), m.group(2));
          assertThat(before == null || before.equals(m.group(2)))
              .as(m.group(1) + " has two defaults in the code").isTrue();
        }
      }
    }
    properties(settings, "kvcache.cache.", new CacheSettings());
    settings.remove("kvcache.cache.s3"); // the group kvcache.cache.s3.*
    properties(settings, "kvcache.", new NamespaceSettings());
    try (InputStream yml = SettingsDocTest.class.getResourceAsStream("/application.yml")) {
      flatten("", new Yaml().load(yml), settings);
    }
    return settings;
  }

  /** The properties of a settings bean, named as the server's configuration names them. */
  private static void properties(Map<String, String> settings, String prefix, Object bean)
      throws Exception {
    for (Method getter : bean.getClass().getDeclaredMethods()) {
      if (getter.getName().startsWith("get") && getter.getParameterCount() == 0) {
        getter.setAccessible(true);
        Object value = getter.invoke(bean);
        String text = value instanceof List<?> list ? String.join(",",
            list.stream().map(String::valueOf).toList()) : String.valueOf(value);
        String name = getter.getName().substring(3).replaceAll("([a-z0-9])([A-Z])", "$1-$2")
            .toLowerCase(java.util.Locale.ROOT);
        settings.put(prefix + name, value instanceof Map ? "" : text);
      }
    }
  }

  @SuppressWarnings("unchecked")
  private static void flatten(String prefix, Object node, Map<String, String> settings) {
    if (node instanceof Map<?, ?> map) {
      map.forEach((k, v) -> flatten(prefix.isEmpty() ? k.toString() : prefix + "." + k, v,
          settings));
    } else if (node instanceof List<?> list) {
      settings.put(prefix, String.join(",", list.stream().map(String::valueOf).toList()));
    } else {
      settings.put(prefix, String.valueOf(node));
    }
  }

  @Test
  void theTableListsEverySettingWithTheCodesDefault() throws Exception {
    Map<String, String> rows = documented();
    Map<String, String> code = inCode();
    for (Map.Entry<String, String> e : code.entrySet()) {
      String name = e.getKey();
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
      boolean group = name.contains("<") || name.endsWith("*")
          || name.startsWith("kvcache.cache.s3."); // the object tier's own, read by its factory
      boolean known = code.containsKey(name) || group
          || name.startsWith("micronaut.") && !name.startsWith("micronaut.server.netty.http2");
      assertThat(known).as(name + " is in server.md's settings but the server reads no such"
          + " setting").isTrue();
    }
  }
}
