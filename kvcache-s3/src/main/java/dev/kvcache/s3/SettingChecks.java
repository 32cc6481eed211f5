package dev.kvcache.s3;

import java.net.URI;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/** The checks {@link S3TierConfig.Builder} and {@link S3TierFactory} make of the values set. */
final class SettingChecks {

  private SettingChecks() {}

  /**
   * What a plain {@code http://} endpoint on another host risks, to be followed by where that
   * is acceptable; empty for an {@code https} or loopback endpoint, or none.
   */
  static Optional<String> plainHttpRisk(URI endpoint) {
    if (endpoint == null || !"http".equals(endpoint.getScheme())
        || loopback(endpoint.getHost())) {
      return Optional.empty();
    }
    return Optional.of(endpoint + " is plain HTTP to another host: whoever sits on the link can"
        + " read the blocks and change them in flight (a CRC32C detects accidents, not an"
        + " attacker); use https, or allow plain HTTP");
  }

  /** Whether a host name or literal address is this host's loopback, without a DNS lookup. */
  private static boolean loopback(String host) {
    String h = host.startsWith("[") ? host.substring(1, host.length() - 1) : host;
    return h.equalsIgnoreCase("localhost") || h.matches("127(\\.\\d{1,3}){3}")
        || h.equals("::1") || h.equals("0:0:0:0:0:0:0:1");
  }

  static String hostAndPort(String what, String value) {
    Objects.requireNonNull(value, what);
    String v = value.strip();
    int colon = v.lastIndexOf(':');
    int port = -1;
    if (colon > 0) {
      try {
        port = Integer.parseInt(v.substring(colon + 1));
      } catch (NumberFormatException e) {
        port = -1;
      }
    }
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("the " + what + " must be host:port, got '" + value
          + "'");
    }
    return v;
  }

  static String requireText(String what, String value) {
    Objects.requireNonNull(value, what);
    if (value.isBlank()) {
      throw new IllegalArgumentException("the " + what + " must not be blank");
    }
    return value;
  }

  static Duration requirePositive(String what, Duration d) {
    Objects.requireNonNull(d, what);
    if (d.isZero() || d.isNegative()) {
      throw new IllegalArgumentException("the " + what + " must be positive, got " + d);
    }
    return d;
  }
}
