package dev.kvcache.s3.internal;

import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds the fleet sharing the bucket: a list given in the settings, or the addresses of a DNS name
 * (looked up again on each call, as the clients do), with this server found by the address it was
 * given or, failing that, by the one among the name's addresses that belongs to this host.
 */
public final class FleetLookup {

  private static final Logger log = LoggerFactory.getLogger(FleetLookup.class);

  private final List<String> servers;
  private final String dnsName;
  private final int port;
  private final String self;

  private FleetLookup(List<String> servers, String dnsName, int port, String self) {
    this.servers = servers;
    this.dnsName = dnsName;
    this.port = port;
    this.self = self;
  }

  /** A server alone. */
  public static FleetLookup alone() {
    return new FleetLookup(List.of(), null, 0, null);
  }

  /** The fixed fleet of {@code servers}, of which this server is {@code self}. */
  public static FleetLookup of(List<String> servers, String self) {
    return new FleetLookup(List.copyOf(servers), null, 0, self);
  }

  /** The fleet at the addresses of {@code nameAndPort}; {@code self} may be null. */
  public static FleetLookup dns(String nameAndPort, String self) {
    int colon = nameAndPort.lastIndexOf(':');
    return new FleetLookup(List.of(), nameAndPort.substring(0, colon),
        Integer.parseInt(nameAndPort.substring(colon + 1)), self);
  }

  /** Whether the fleet can change: it is found by DNS. */
  public boolean changes() {
    return dnsName != null;
  }

  /** The fleet now; empty if its DNS name cannot be looked up (the last fleet stands). */
  public Optional<Fleet> find() {
    if (dnsName == null) {
      return Optional.of(servers.isEmpty() ? Fleet.ALONE : Fleet.of(servers, self));
    }
    InetAddress[] addresses;
    try {
      addresses = InetAddress.getAllByName(dnsName);
    } catch (UnknownHostException e) {
      log.warn("the fleet's DNS name {} cannot be looked up: {}", dnsName, e.getMessage());
      return Optional.empty();
    }
    // sorted, as the clients' order does not matter to rendezvous hashing but a stable one helps
    // to see that a lookup found the same fleet
    List<String> members = new ArrayList<>(addresses.length);
    String me = self;
    for (InetAddress a : addresses) {
      String member = a.getHostAddress() + ":" + port;
      members.add(member);
      if (self == null && me == null && local(a)) {
        me = member;
      }
    }
    members = members.stream().distinct().sorted().toList();
    return Optional.of(Fleet.of(members, me == null ? "" : me));
  }

  private static boolean local(InetAddress a) {
    try {
      return a.isLoopbackAddress() || NetworkInterface.getByInetAddress(a) != null;
    } catch (SocketException e) {
      return false;
    }
  }

  @Override
  public String toString() {
    return dnsName != null ? dnsName + ":" + port : servers.isEmpty() ? "alone"
        : servers + " as " + self;
  }
}
