package dev.kvcache.disk;

import dev.kvcache.BlockKey;
import dev.kvcache.PutStatus;
import dev.kvcache.testkit.Payloads;
import java.nio.file.Path;
import java.util.SplittableRandom;

/**
 * The child process of {@link CrashTest}: applies {@link #op}s to a disk tier in order, printing
 * "ok N" after op N returns, until it is killed.
 */
public final class CrashWriter {

  static final int KEYS = 64;

  /** Op {@code n} of the sequence seeded with {@code seed}: a put of version n, or a delete. */
  static Op op(long seed, int n) {
    SplittableRandom r = new SplittableRandom(seed * 1_000_003 + n);
    int key = r.nextInt(KEYS);
    boolean delete = r.nextInt(10) == 0;
    int length = 1 + r.nextInt(96 << 10);
    return new Op(key, delete, n, Math.max(length, Payloads.HEADER_BYTES));
  }

  record Op(int key, boolean delete, long version, int length) {
    BlockKey blockKey() {
      return Payloads.key(key);
    }
  }

  static DiskTierConfig config(Path dir, SyncPolicy policy) {
    return DiskTierConfig.builder(dir, 512L << 20).superBlockBytes(2L << 20).minFreeBytes(0)
        .syncPolicy(policy).syncIntervalMillis(20).checkpointJournalBytes(64 << 10).build();
  }

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    SyncPolicy policy = SyncPolicy.valueOf(args[1]);
    long seed = Long.parseLong(args[2]);
    int start = Integer.parseInt(args[3]);
    try (DiskTier tier = DiskTier.open(config(dir, policy))) {
      System.out.println("open");
      System.out.flush();
      for (int n = start; ; n++) {
        Op op = op(seed, n);
        if (op.delete()) {
          tier.delete(op.blockKey());
        } else if (tier.put(op.blockKey(), Payloads.of(op.blockKey(), op.version(), op.length()))
            != PutStatus.STORED) {
          throw new AssertionError("put " + n + " was not stored");
        }
        System.out.println("ok " + n);
        System.out.flush();
      }
    }
  }
}
