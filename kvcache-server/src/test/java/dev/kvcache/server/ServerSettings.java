package dev.kvcache.server;

import dev.kvcache.server.access.NamespaceSettings;
import dev.kvcache.server.cache.CacheSettings;
import dev.kvcache.server.cache.SealingSettings;
import dev.kvcache.server.events.EventSettings;
import dev.kvcache.server.s3.S3Settings;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.yaml.snakeyaml.Yaml;

/**
 * The settings the server reads, as its code gives them, for the tests that hold its docs against
 * it: the defaults of {@code @Value("${kvcache...:default}")} in its sources, the properties of
 * {@link CacheSettings}, {@link NamespaceSettings}, {@link EventSettings}, {@link
 * SealingSettings} and {@link S3Settings}, and the embedded {@code application.yml},
 * which wins where it sets one.
 */
public final class ServerSettings {

  private static final Pattern VALUE = Pattern.compile("\\$\\{(kvcache\\.[a-z0-9.-]+):([^}]*)}");

  private ServerSettings() {}

  /**
   * The settings the server reads, by name, with their default (empty where there is none);
   * {@code kvcache.cache.s3.*}, a group passed on to the object tier, is not among them.
   *
   * @param module the kvcache-server module's directory, whose sources are read
   * @throws IllegalStateException if a setting has two defaults in the code
   */
  public static Map<String, String> inCode(Path module) {
    Map<String, String> settings = new TreeMap<>();
    try (Stream<Path> files = Files.walk(module.resolve(Path.of("src", "main", "java")))) {
      for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".java"))::iterator) {
        Matcher m = VALUE.matcher(Files.readString(f, StandardCharsets.UTF_8));
        while (m.find()) {
          String before = settings.put(m.group(1), m.group(2));
          if (before != null && !before.equals(m.group(2))) {
            throw new IllegalStateException(m.group(1) + " has two defaults in the code");
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    properties(settings, "kvcache.cache.", new CacheSettings());
    settings.remove("kvcache.cache.s3"); // the group kvcache.cache.s3.*
    properties(settings, "kvcache.", new NamespaceSettings());
    properties(settings, "kvcache.events.", new EventSettings());
    properties(settings, "kvcache.sealing.", new SealingSettings());
    properties(settings, "kvcache.s3.", new S3Settings());
    try (InputStream yml = ServerSettings.class.getResourceAsStream("/application.yml")) {
      flatten("", new Yaml().load(yml), settings);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return settings;
  }

  /** The properties of a settings bean, named as the server's configuration names them. */
  private static void properties(Map<String, String> settings, String prefix, Object bean) {
    for (Method getter : bean.getClass().getDeclaredMethods()) {
      String property = getter.getName().startsWith("get") ? getter.getName().substring(3)
          : getter.getName().startsWith("is") && getter.getReturnType() == boolean.class
              ? getter.getName().substring(2) : null;
      if (property != null && getter.getParameterCount() == 0) {
        Object value;
        try {
          getter.setAccessible(true);
          value = getter.invoke(bean);
        } catch (ReflectiveOperationException e) {
          throw new IllegalStateException(e);
        }
        String text = value instanceof List<?> list ? String.join(",",
            list.stream().map(String::valueOf).toList()) : String.valueOf(value);
        String name = property.replaceAll("([a-z0-9])([A-Z])", "$1-$2")
            .toLowerCase(Locale.ROOT);
        settings.put(prefix + name, value instanceof Map || value == null ? "" : text);
      }
    }
  }

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
}
