package dev.kvcache.disk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.GetStatus;
import dev.kvcache.disk.tool.DiskToolTest;
import dev.kvcache.testkit.Payloads;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kills a writing child JVM with SIGKILL at random moments, many times over the same directory,
 * and checks after each restart that every acknowledged put and delete holds (a put or delete in
 * flight at the kill may or may not have happened) and that no read returns bytes that were never
 * put under the key.
 */
@Tag("crash")
class CrashTest {

  private static final int ROUNDS = Integer.getInteger("kvcache.crashRounds", 20);

  @TempDir Path temp;

  @ParameterizedTest
  @EnumSource(SyncPolicy.class)
  void acknowledgedWritesSurviveSigkill(SyncPolicy policy) throws Exception {
    Path dir = temp.resolve(policy.name());
    long seed = 42 + policy.ordinal();
    SplittableRandom random = new SplittableRandom(seed);
    // expected state per key: the version of the last acknowledged put, or -1 after a delete
    Map<Integer, Long> expected = new HashMap<>();
    int next = 0;
    for (int round = 0; round < ROUNDS; round++) {
      int acked = runAndKill(dir, policy, seed, next, 30 + random.nextInt(300));
      for (int n = next; n < acked; n++) {
        CrashWriter.Op op = CrashWriter.op(seed, n);
        expected.put(op.key(), op.delete() ? -1 : op.version());
      }
      CrashWriter.Op inFlight = CrashWriter.op(seed, acked);
      try (DiskTier tier = DiskTier.open(CrashWriter.config(dir, policy))) {
        for (int k = 0; k < CrashWriter.KEYS; k++) {
          Set<Long> allowed = new HashSet<>();
          allowed.add(expected.getOrDefault(k, -1L));
          if (inFlight.key() == k) {
            allowed.add(inFlight.delete() ? -1 : inFlight.version());
          }
          long found = read(tier, Payloads.key(k));
          assertThat(allowed).as("round %d, key %d (acknowledged ops: %d)", round, k, acked)
              .contains(found);
          expected.put(k, found); // the in-flight op's outcome is now settled
        }
        assertThat(tier.diskStats().corruptBlocks()).isZero();
      }
      assertThat(DiskToolTest.tool("verify", dir.toString()).exit()).as("verify after round %d", round)
          .isZero();
      next = acked + 1;
    }
    assertThat(next).as("ops the writers got through").isGreaterThan(ROUNDS * 10);
  }

  /** The version stored under {@code key}, -1 if none; fails on bytes that belong to no put. */
  private static long read(DiskTier tier, BlockKey key) {
    try (BlockLease lease = tier.get(key)) {
      if (lease.status() == GetStatus.MISS) {
        return -1;
      }
      return Payloads.verify(key, lease.bytes());
    }
  }

  /** Runs the writer from op {@code start}, kills it after about {@code millis}; returns ops acknowledged up to. */
  private static int runAndKill(Path dir, SyncPolicy policy, long seed, int start, int millis)
      throws IOException, InterruptedException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process child = new ProcessBuilder(java, "-Xmx256m", "-cp", System.getProperty("java.class.path"),
        CrashWriter.class.getName(), dir.toString(), policy.name(), Long.toString(seed),
        Integer.toString(start))
        .redirectError(ProcessBuilder.Redirect.DISCARD)
        .start();
    int acked = start;
    try (BufferedReader out = new BufferedReader(
        new InputStreamReader(child.getInputStream(), StandardCharsets.US_ASCII))) {
      String line = out.readLine();
      assertThat(line).as("the writer opened the directory").isEqualTo("open");
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
      while (System.nanoTime() < deadline && (line = out.readLine()) != null) {
        if (line.startsWith("ok ")) {
          acked = Integer.parseInt(line.substring(3)) + 1;
        }
      }
      child.toHandle().destroyForcibly(); // SIGKILL, leaving our end of its output open
      child.waitFor(10, TimeUnit.SECONDS);
      while ((line = out.readLine()) != null) {
        if (line.startsWith("ok ")) {
          acked = Integer.parseInt(line.substring(3)) + 1;
        }
      }
    }
    return acked;
  }
}
