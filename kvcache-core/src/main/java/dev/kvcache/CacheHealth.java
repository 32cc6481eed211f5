package dev.kvcache;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Whether a cache works as configured. A degraded cache still answers every call and serves what
 * it holds, but some of its promises are on hold: a disk tier that found no room for its files
 * refuses puts, and a tier whose writes fail (a full disk, an I/O error) stores nothing new. Each
 * problem says what is wrong in words an operator can act on; a cache recovers by itself when the
 * cause goes away (space freed, the device back).
 *
 * @param problems what is wrong, one line each; empty when the cache is healthy
 */
public record CacheHealth(List<String> problems) {

  /** A healthy cache. */
  public static final CacheHealth OK = new CacheHealth(List.of());

  public CacheHealth {
    problems = List.copyOf(Objects.requireNonNull(problems, "problems"));
  }

  /** A cache with one problem. */
  public static CacheHealth degraded(String problem) {
    return new CacheHealth(List.of(problem));
  }

  /** Whether some promise is on hold (see the class description). */
  public boolean degraded() {
    return !problems.isEmpty();
  }

  /** This health and {@code other}'s problems together, each prefixed by where it comes from. */
  public CacheHealth and(String where, CacheHealth other) {
    if (!other.degraded()) {
      return this;
    }
    List<String> all = new ArrayList<>(problems);
    for (String p : other.problems) {
      all.add(where + ": " + p);
    }
    return new CacheHealth(all);
  }
}
