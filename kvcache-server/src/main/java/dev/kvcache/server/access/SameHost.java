package dev.kvcache.server.access;

import io.micronaut.context.annotation.Value;
import io.micronaut.http.HttpRequest;
import jakarta.inject.Singleton;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;

/**
 * Which peers count as clients on the server's own host ({@code kvcache.same-host}): those are
 * offered blocks in the server's shared memory and may have blocks copied into their files. By
 * default the loopback addresses {@code 127.0.0.1} and {@code ::1} alone: a sidecar proxy connects
 * from another loopback address (Istio's from {@code 127.0.0.6}) on behalf of remote clients, which
 * must not count as local. Entries are addresses or ranges ({@code 10.0.0.0/8}); none turns
 * same-host access off.
 */
@Singleton
public class SameHost {

  /** An address range: the first {@code bits} bits of {@code address}. */
  private record Range(byte[] address, int bits) {
    boolean contains(InetAddress a) {
      byte[] b = a.getAddress();
      if (b.length != address.length) {
        return false;
      }
      for (int i = 0; i < bits; i++) {
        int mask = 0x80 >>> (i % 8);
        if ((b[i / 8] & mask) != (address[i / 8] & mask)) {
          return false;
        }
      }
      return true;
    }
  }

  private final List<Range> ranges;

  /** @param entries the setting; its default, in {@code application.yml}, the two loopbacks */
  SameHost(@Value("${kvcache.same-host}") List<String> entries) {
    List<Range> parsed = new ArrayList<>();
    for (String entry : entries) {
      if (!entry.isBlank()) {
        parsed.add(parse(entry.strip()));
      }
    }
    this.ranges = List.copyOf(parsed);
  }

  private static Range parse(String entry) {
    int slash = entry.indexOf('/');
    String host = slash < 0 ? entry : entry.substring(0, slash);
    if (!host.matches("[0-9a-fA-F:.]+")) {
      throw new IllegalArgumentException("kvcache.same-host: '" + entry
          + "' is not an IP address or range (such as 127.0.0.1 or 10.0.0.0/8)");
    }
    byte[] address;
    try {
      address = InetAddress.getByName(host).getAddress(); // a literal: nothing is looked up
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException("kvcache.same-host: '" + entry + "' is not an IP address");
    }
    int bits = address.length * 8;
    if (slash >= 0) {
      try {
        bits = Integer.parseInt(entry.substring(slash + 1));
      } catch (NumberFormatException e) {
        bits = -1;
      }
      if (bits < 0 || bits > address.length * 8) {
        throw new IllegalArgumentException("kvcache.same-host: '" + entry
            + "' has a prefix length outside 0 to " + address.length * 8);
      }
    }
    return new Range(address, bits);
  }

  /** Whether {@code http} comes from a peer that counts as this host. */
  public boolean contains(HttpRequest<?> http) {
    InetSocketAddress remote = http.getRemoteAddress();
    return remote != null && contains(remote.getAddress());
  }

  /** Whether {@code address} counts as this host. */
  public boolean contains(InetAddress address) {
    if (address == null) {
      return false;
    }
    for (Range r : ranges) {
      if (r.contains(address)) {
        return true;
      }
    }
    return false;
  }
}
