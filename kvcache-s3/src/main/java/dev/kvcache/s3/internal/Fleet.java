package dev.kvcache.s3.internal;

import dev.kvcache.BlockKey;
import dev.kvcache.spi.Rendezvous;
import java.util.List;
import java.util.Objects;

/**
 * The servers sharing a bucket, as the clients know them ({@code host:port}), and which of them
 * this one is: a key's object is owned by the server the clients send the key to (rendezvous
 * hashing over the same list), and only its owner evicts it. A server alone owns every key; a
 * server not in the list (not yet among its DNS name's addresses, say) owns none.
 */
public final class Fleet {

  /** A server alone: it owns every key. */
  public static final Fleet ALONE = new Fleet(List.of(), -1);

  /** A fleet not found yet (its DNS name could not be looked up): this server owns nothing. */
  public static final Fleet UNKNOWN = new Fleet(List.of("unknown"), -1);

  private final List<String> members;
  private final int self;
  private final long[] ids;

  private Fleet(List<String> members, int self) {
    this.members = List.copyOf(members);
    this.self = self;
    this.ids = members.stream().mapToLong(Rendezvous::serverId).toArray();
  }

  /** The fleet of {@code members} in which this server is {@code self} (or none of them). */
  public static Fleet of(List<String> members, String self) {
    Objects.requireNonNull(self, "self");
    if (members.isEmpty()) {
      throw new IllegalArgumentException("a fleet has at least one server");
    }
    return new Fleet(members, members.indexOf(self));
  }

  /** Whether this server owns the key's object. */
  public boolean owns(BlockKey key) {
    if (ids.length == 0) {
      return true;
    }
    if (self < 0) {
      return false;
    }
    long mine = Rendezvous.score(key, ids[self]);
    for (int i = 0; i < ids.length; i++) {
      long s = Rendezvous.score(key, ids[i]);
      if (s > mine || (s == mine && i < self)) {
        return false;
      }
    }
    return true;
  }

  /** This server's part of the bucket's capacity: one member's share. */
  public long share(long capacityBytes) {
    return ids.length == 0 ? capacityBytes : capacityBytes / ids.length;
  }

  /** The servers, as the clients name them; empty for a server alone. */
  public List<String> members() {
    return members;
  }

  /** Whether this server is one of the members (or alone). */
  public boolean member() {
    return ids.length == 0 || self >= 0;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Fleet f && f.self == self && f.members.equals(members);
  }

  @Override
  public int hashCode() {
    return members.hashCode() * 31 + self;
  }

  @Override
  public String toString() {
    return ids.length == 0 ? "alone"
        : members + (self >= 0 ? " as " + members.get(self) : " (not a member)");
  }
}
