package dev.kvcache.spi;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Named string settings (from a properties file, environment variables or a server's
 * configuration), read with typed accessors whose errors name the setting, its value and the form
 * expected. Keys no accessor read are reported by {@link #requireAllRead()}, so a misspelt
 * setting is an error rather than silently ignored.
 *
 * <p>A setting is named in errors as whoever reads it from its user names it: its key after the
 * prefix given to {@link #of(Map, String)} (a server passes its own, such as {@code
 * kvcache.cache.disk-}) and the groups taken with {@link #group(String)}.
 */
public final class TierSettings {

  private static final Pattern SIZE = Pattern.compile("(\\d+)\\s*([KMGT]i?B|B)?", Pattern.CASE_INSENSITIVE);
  private static final Pattern DURATION = Pattern.compile("(\\d+)\\s*(ms|s|m|h)", Pattern.CASE_INSENSITIVE);

  private final String prefix;
  private final Map<String, String> values;
  private final Set<String> read = new TreeSet<>();

  private TierSettings(String prefix, Map<String, String> values) {
    this.prefix = prefix;
    this.values = values;
  }

  /** The settings in {@code values}, keys as given. */
  public static TierSettings of(Map<String, String> values) {
    return of(values, "");
  }

  /**
   * The settings in {@code values}, named {@code prefix + key} in errors, as the configuration
   * they came from names them.
   */
  public static TierSettings of(Map<String, String> values, String prefix) {
    return new TierSettings(prefix, new TreeMap<>(values));
  }

  /** The setting's name as its user wrote it, for messages: the prefix and the key. */
  public String name(String key) {
    return prefix + key;
  }

  /**
   * Runs {@code step}, which checks values read from {@code keys}, and names the settings in its
   * error.
   *
   * @throws IllegalArgumentException the step's, with "setting 'name': " (or "settings 'a' and
   *     'b': ") before its message; or if no key is given
   */
  public <T> T checked(Supplier<T> step, String... keys) {
    if (keys.length == 0) {
      throw new IllegalArgumentException("name the settings the step checks");
    }
    try {
      return step.get();
    } catch (IllegalArgumentException e) {
      StringBuilder names = new StringBuilder(keys.length > 1 ? "settings " : "setting ");
      for (int i = 0; i < keys.length; i++) {
        names.append(i == 0 ? "" : i == keys.length - 1 ? " and " : ", ")
            .append('\'').append(name(keys[i])).append('\'');
      }
      throw new IllegalArgumentException(names + ": " + e.getMessage(), e);
    }
  }

  /** The settings whose keys start with {@code group + "."}, with that part removed. */
  public TierSettings group(String group) {
    Map<String, String> sub = new TreeMap<>();
    String start = group + ".";
    for (Map.Entry<String, String> e : values.entrySet()) {
      if (e.getKey().startsWith(start)) {
        sub.put(e.getKey().substring(start.length()), e.getValue());
        read.add(e.getKey());
      }
    }
    return new TierSettings(prefix + start, sub);
  }

  /** Whether the setting is present. */
  public boolean has(String key) {
    return values.containsKey(key);
  }

  /** The raw value, or {@code fallback} when absent. */
  public String string(String key, String fallback) {
    read.add(key);
    String v = values.get(key);
    return v == null ? fallback : v.strip();
  }

  /** A required raw value. */
  public String string(String key) {
    String v = string(key, null);
    if (v == null || v.isEmpty()) {
      throw new IllegalArgumentException("setting '" + name(key) + "' is required");
    }
    return v;
  }

  /**
   * A byte count, or {@code fallback} when absent: a number with an optional unit (B, KiB, MiB,
   * GiB, TiB; KB, MB, ... are the same).
   */
  public long bytes(String key, long fallback) {
    String v = string(key, null);
    if (v == null) {
      return fallback;
    }
    Matcher m = SIZE.matcher(v);
    if (!m.matches()) {
      throw bad(key, v, "a size such as 512MiB or 8GiB");
    }
    long n = number(key, v, m.group(1));
    String unit = m.group(2) == null ? "B" : m.group(2).toUpperCase(Locale.ROOT);
    int shift = switch (unit.charAt(0)) {
      case 'K' -> 10;
      case 'M' -> 20;
      case 'G' -> 30;
      case 'T' -> 40;
      default -> 0;
    };
    if (n > (Long.MAX_VALUE >> shift)) {
      throw bad(key, v, "a size below 8 EiB");
    }
    return n << shift;
  }

  /** A required byte count, in the form {@link #bytes(String, long)} reads. */
  public long bytes(String key) {
    string(key);
    return bytes(key, 0);
  }

  /** A byte count below 2 GiB, or {@code fallback} when absent. */
  public int intBytes(String key, int fallback) {
    long n = bytes(key, fallback);
    if (n > Integer.MAX_VALUE) {
      throw bad(key, string(key, ""), "a size below 2 GiB");
    }
    return (int) n;
  }

  /**
   * A whole number from {@code min} to {@code max}, or {@code fallback} when absent (which the
   * caller keeps in that range).
   */
  public int integer(String key, int fallback, int min, int max) {
    int n = integer(key, fallback);
    if (n < min || n > max) {
      throw bad(key, string(key, ""), min + " to " + max);
    }
    return n;
  }

  /** A whole number, or {@code fallback} when absent. */
  public int integer(String key, int fallback) {
    String v = string(key, null);
    if (v == null) {
      return fallback;
    }
    try {
      return Integer.parseInt(v);
    } catch (NumberFormatException e) {
      throw bad(key, v, "a whole number");
    }
  }

  /** {@code true} or {@code false}, or {@code fallback} when absent. */
  public boolean bool(String key, boolean fallback) {
    String v = string(key, null);
    if (v == null) {
      return fallback;
    }
    return switch (v.toLowerCase(Locale.ROOT)) {
      case "true" -> true;
      case "false" -> false;
      default -> throw bad(key, v, "true or false");
    };
  }

  /** A duration, or {@code fallback} when absent: a number with a unit, ms, s, m or h. */
  public Duration duration(String key, Duration fallback) {
    String v = string(key, null);
    if (v == null) {
      return fallback;
    }
    Matcher m = DURATION.matcher(v);
    if (!m.matches()) {
      throw bad(key, v, "a duration such as 200ms, 5s or 1m");
    }
    long n = number(key, v, m.group(1));
    return switch (m.group(2).toLowerCase(Locale.ROOT)) {
      case "ms" -> Duration.ofMillis(n);
      case "s" -> Duration.ofSeconds(n);
      case "m" -> Duration.ofMinutes(n);
      default -> Duration.ofHours(n);
    };
  }

  /**
   * One of an enum's constants by name, in any case and with {@code -} for {@code _}, or {@code
   * fallback} when absent.
   */
  public <E extends Enum<E>> E choice(String key, Class<E> type, E fallback) {
    String v = string(key, null);
    if (v == null) {
      return fallback;
    }
    for (E e : type.getEnumConstants()) {
      if (e.name().equalsIgnoreCase(v.replace('-', '_'))) {
        return e;
      }
    }
    StringBuilder names = new StringBuilder();
    for (E e : type.getEnumConstants()) {
      names.append(names.length() == 0 ? "" : ", ").append(e.name().toLowerCase(Locale.ROOT));
    }
    throw bad(key, v, "one of " + names);
  }

  /**
   * @throws IllegalArgumentException naming every setting that no accessor read (a typo, or a
   *     setting of a part that is not used)
   */
  public void requireAllRead() {
    Set<String> unknown = new TreeSet<>(values.keySet());
    unknown.removeAll(read);
    if (!unknown.isEmpty()) {
      StringBuilder names = new StringBuilder();
      for (String k : unknown) {
        names.append(names.length() == 0 ? "" : ", ").append(prefix).append(k);
      }
      throw new IllegalArgumentException("unknown setting" + (unknown.size() > 1 ? "s " : " ") + names);
    }
  }

  private long number(String key, String value, String digits) {
    try {
      return Long.parseLong(digits);
    } catch (NumberFormatException e) {
      throw bad(key, value, "a number below 2^63");
    }
  }

  private IllegalArgumentException bad(String key, String value, String expected) {
    return new IllegalArgumentException(
        "setting '" + name(key) + "' is '" + value + "', expected " + expected);
  }
}
