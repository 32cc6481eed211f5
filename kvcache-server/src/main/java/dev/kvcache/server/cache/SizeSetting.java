package dev.kvcache.server.cache;

import dev.kvcache.spi.TierSettings;
import java.util.Map;

/** A byte-count setting of the server, read as the cache's are: a number with an optional unit. */
public final class SizeSetting {

  private SizeSetting() {}

  /**
   * The bytes {@code value} gives, at least {@code min}.
   *
   * @throws IllegalArgumentException naming the setting, if the value is malformed or too small
   */
  public static long bytes(String name, String value, long min) {
    return atLeast(name, value, TierSettings.of(Map.of(name, value)).bytes(name), min);
  }

  /** As {@link #bytes}, below 2 GiB. */
  public static int intBytes(String name, String value, int min) {
    return (int) atLeast(name, value, TierSettings.of(Map.of(name, value)).intBytes(name, 0), min);
  }

  private static long atLeast(String name, String value, long n, long min) {
    if (n < min) {
      throw new IllegalArgumentException(
          "setting '" + name + "' is '" + value + "': it must be at least " + min + " bytes");
    }
    return n;
  }
}
