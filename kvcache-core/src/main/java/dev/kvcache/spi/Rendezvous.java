package dev.kvcache.spi;

import dev.kvcache.BlockKey;
import java.util.List;

/**
 * Rendezvous (highest random weight) hashing: a key goes to the server scoring highest for it, so
 * adding or removing one of n servers moves only about 1/n of the keys, and every client with the
 * same list agrees without coordination. Keys are already uniform (SHA-256), so a score is the
 * key's bits mixed with the server's id by a 64-bit finalizer.
 *
 * <p>The clients shard keys over servers with it, and an object tier shared by a fleet divides
 * its objects between the servers with it, so that each key's server is also its object's owner.
 * The Python client computes the same ids, scores and picks (its {@code _rendezvous} module).
 */
public final class Rendezvous {

  private Rendezvous() {}

  /** The index in {@code serverIds} of the server for {@code key}. */
  public static int pick(BlockKey key, List<Long> serverIds) {
    int best = 0;
    long bestScore = Long.MIN_VALUE;
    for (int i = 0; i < serverIds.size(); i++) {
      long score = score(key, serverIds.get(i));
      if (score > bestScore || (score == bestScore && i < best)) {
        best = i;
        bestScore = score;
      }
    }
    return best;
  }

  /** The key's score on a server: the highest score owns the key. */
  public static long score(BlockKey key, long serverId) {
    return mix(key.hi() ^ mix(key.lo() ^ serverId));
  }

  /** A stable id for a server's address, the same in every client. */
  public static long serverId(String hostAndPort) {
    long h = 0xcbf29ce484222325L; // FNV-1a over the bytes, then mixed
    for (int i = 0; i < hostAndPort.length(); i++) {
      h ^= hostAndPort.charAt(i);
      h *= 0x100000001b3L;
    }
    return mix(h);
  }

  /** MurmurHash3's 64-bit finalizer. */
  public static long mix(long z) {
    z = (z ^ (z >>> 33)) * 0xff51afd7ed558ccdL;
    z = (z ^ (z >>> 33)) * 0xc4ceb9fe1a85ec53L;
    return z ^ (z >>> 33);
  }
}
