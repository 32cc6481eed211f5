package dev.kvcache.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.server.TestServer;
import dev.kvcache.testkit.Payloads;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Three servers on loopback behind one client; one is stopped mid-run and started again. */
class ShardingTest {

  static final int BLOCK = 64 * 1024;
  static final int KEYS = 300;

  @TempDir Path dir;

  static RemoteTier client(List<TestServer> servers) {
    RemoteTierConfig.Builder b = RemoteTierConfig.builder()
        .requestTimeout(Duration.ofSeconds(5))
        .downBackoff(Duration.ofMillis(200), Duration.ofMillis(400));
    servers.forEach(s -> b.server("127.0.0.1", s.port()));
    return new RemoteTier(b.build());
  }

  @Test
  void keysSpreadOverAllServersAndEachIsFoundWhereItWasPut() {
    List<TestServer> servers = new ArrayList<>();
    try {
      for (int i = 0; i < 3; i++) {
        servers.add(TestServer.start(dir.resolve("s" + i)));
      }
      Map<Integer, Integer> perServer = new HashMap<>();
      try (RemoteTier remote = client(servers)) {
        for (int i = 0; i < KEYS; i++) {
          BlockKey key = Payloads.key(i);
          assertThat(remote.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
        }
        // each server holds only its share: a client of one server alone finds just those keys
        for (int s = 0; s < servers.size(); s++) {
          try (RemoteTier one = client(List.of(servers.get(s)))) {
            for (int i = 0; i < KEYS; i++) {
              if (one.contains(Payloads.key(i))) {
                perServer.merge(s, 1, Integer::sum);
              }
            }
          }
        }
        for (int i = 0; i < KEYS; i++) {
          ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
          assertThat(remote.getInto(Payloads.key(i), dst)).isEqualTo(GetStatus.HIT);
          assertThat(Payloads.verify(Payloads.key(i), dst.flip())).isEqualTo(1);
        }
      }
      assertThat(perServer.values().stream().mapToInt(Integer::intValue).sum()).isEqualTo(KEYS);
      assertThat(perServer.values()).hasSize(3).allSatisfy(n -> assertThat(n).isBetween(60, 140));
    } finally {
      servers.forEach(TestServer::close);
    }
  }

  @Test
  void aServerStoppedMidRunMakesItsKeysMissesThenServesThemAgainAfterItsRestart()
      throws Exception {
    List<TestServer> servers = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      servers.add(TestServer.start(dir.resolve("s" + i)));
    }
    try (RemoteTier remote = client(servers)) {
      for (int i = 0; i < KEYS; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(remote.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
      }
      // the keys of the server about to be stopped, as a client of it alone finds them, and one
      // key of another server
      List<BlockKey> onStopped = new ArrayList<>();
      BlockKey onLive = null;
      try (RemoteTier one = client(List.of(servers.get(1)))) {
        for (int i = 0; i < KEYS; i++) {
          if (one.contains(Payloads.key(i))) {
            onStopped.add(Payloads.key(i));
          } else if (onLive == null) {
            onLive = Payloads.key(i);
          }
        }
      }
      assertThat(onStopped).isNotEmpty();
      assertThat(onLive).isNotNull();
      AtomicBoolean stop = new AtomicBoolean();
      ExecutorService pool = Executors.newFixedThreadPool(4);
      List<Future<int[]>> readers = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        int seed = t;
        readers.add(pool.submit(() -> {
          int[] hitsAndMisses = new int[2];
          if (seed == 0) {
            batchReads(remote, stop, hitsAndMisses);
            return hitsAndMisses;
          }
          ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
          for (int n = 0; !stop.get(); n++) {
            BlockKey key = Payloads.key((n * 7 + seed) % KEYS);
            dst.clear();
            GetStatus status = remote.getInto(key, dst);
            if (status == GetStatus.HIT) {
              assertThat(Payloads.verify(key, dst.flip())).isEqualTo(1); // never wrong bytes
              hitsAndMisses[0]++;
            } else {
              assertThat(status).isEqualTo(GetStatus.MISS);
              hitsAndMisses[1]++;
            }
          }
          return hitsAndMisses;
        }));
      }
      Thread.sleep(300);
      int victimPort = servers.get(1).port();
      servers.get(1).close(); // stopped under load: reads of its keys become misses
      Thread.sleep(1000);
      int during = 0;
      for (int i = 0; i < KEYS; i++) {
        during += remote.contains(Payloads.key(i)) ? 1 : 0;
      }
      stop.set(true);
      int hits = 0;
      int misses = 0;
      for (Future<int[]> f : readers) {
        hits += f.get()[0];
        misses += f.get()[1];
      }
      pool.shutdown();
      assertThat(hits).isPositive();
      assertThat(misses).isPositive();
      assertThat(during).as("keys found while a server is down").isEqualTo(KEYS - onStopped.size());
      // a new version of a key of the stopped server is dropped; one of a live server's key is
      // stored (its RAM holds every block of this test, so its policy takes it)
      BlockKey dropped = onStopped.get(0);
      assertThat(remote.put(dropped, Payloads.of(dropped, 2, BLOCK)))
          .as("a put to the stopped server").isEqualTo(PutStatus.NOT_ADMITTED);
      assertThat(remote.put(onLive, Payloads.of(onLive, 2, BLOCK)))
          .as("a put to a live server").isEqualTo(PutStatus.STORED);

      servers.set(1, TestServer.start(dir.resolve("s1"),
          Map.of("micronaut.server.port", victimPort)));
      Thread.sleep(600); // past the back-off
      int after = 0;
      for (int i = 0; i < KEYS; i++) {
        after += remote.contains(Payloads.key(i)) ? 1 : 0;
      }
      assertThat(after).as("the restarted server's disk tier kept its blocks").isEqualTo(KEYS);
      List<BlockKey> all = new ArrayList<>();
      List<ByteBuffer> dsts = new ArrayList<>();
      for (int i = 0; i < KEYS; i++) {
        all.add(Payloads.key(i));
        dsts.add(ByteBuffer.allocateDirect(BLOCK));
      }
      assertThat(remote.getAllInto(all, dsts)).containsOnly(GetStatus.HIT);
      for (int i = 0; i < KEYS; i++) {
        // the put to the stopped server was dropped, not kept for when it came back
        long version = all.get(i).equals(onLive) ? 2 : 1;
        assertThat(Payloads.verify(all.get(i), dsts.get(i).flip())).as("version of %s", all.get(i))
            .isEqualTo(version);
      }
    } finally {
      servers.forEach(TestServer::close);
    }
  }

  @Test
  void aPinnedLookupHoldsEachBlockOnItsOwnServerUntilClosed() throws Exception {
    List<TestServer> servers = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      servers.add(TestServer.start(dir.resolve("s" + i)));
    }
    try (RemoteTier remote = client(servers)) {
      List<BlockKey> keys = new ArrayList<>();
      for (int i = 0; i < 30; i++) {
        BlockKey key = Payloads.key(500 + i);
        keys.add(key);
        if (i != 20) {
          assertThat(remote.put(key, Payloads.of(key, 1, BLOCK))).isEqualTo(PutStatus.STORED);
        }
      }
      try (PrefixPin pin = remote.pinPrefix(keys, Duration.ofSeconds(30))) {
        assertThat(pin.blocks()).isEqualTo(20);
        assertThat(servers.stream().mapToDouble(TestServer::leasesOpen).sum())
            .as("each server pins its own leading blocks").isGreaterThanOrEqualTo(20);
        for (int i = 0; i < 20; i++) {
          assertThat(pin.length(i)).isEqualTo(BLOCK);
          remote.put(keys.get(i), Payloads.of(keys.get(i), 2, BLOCK)); // replaced on the servers
        }
        ByteBuffer dst = ByteBuffer.allocateDirect(BLOCK);
        for (int i = 0; i < 20; i++) {
          assertThat(pin.key(i)).isEqualTo(keys.get(i));
          assertThat(pin.getInto(i, dst.clear())).isEqualTo(GetStatus.HIT);
          assertThat(Payloads.verify(keys.get(i), dst.flip())).as("the block pinned").isEqualTo(1);
        }
        servers.get(1).close(); // its pinned blocks become misses, the others still read
        int hits = 0;
        for (int i = 0; i < 20; i++) {
          dst.clear();
          GetStatus status = pin.getInto(i, dst);
          if (status == GetStatus.HIT) {
            assertThat(Payloads.verify(keys.get(i), dst.flip())).isEqualTo(1);
            hits++;
          } else {
            assertThat(status).isEqualTo(GetStatus.MISS);
            assertThat(dst.position()).as("a missed block's buffer is untouched").isZero();
          }
        }
        assertThat(hits).isBetween(1, 19);
      }
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (servers.get(0).leasesOpen() + servers.get(2).leasesOpen() > 0
          && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertThat(servers.get(0).leasesOpen() + servers.get(2).leasesOpen())
          .as("closing the pin released the servers' leases").isZero();
    } finally {
      servers.forEach(TestServer::close);
    }
  }

  /** Reads batches of 8 keys (from all three servers) until stopped: hits are right, the rest miss. */
  private static void batchReads(RemoteTier remote, AtomicBoolean stop, int[] hitsAndMisses) {
    List<ByteBuffer> dsts = new ArrayList<>();
    for (int j = 0; j < 8; j++) {
      dsts.add(ByteBuffer.allocateDirect(BLOCK));
    }
    for (int n = 0; !stop.get(); n++) {
      List<BlockKey> keys = new ArrayList<>();
      for (int j = 0; j < 8; j++) {
        keys.add(Payloads.key((n * 8 + j) % KEYS));
        dsts.get(j).clear();
      }
      GetStatus[] statuses = remote.getAllInto(keys, dsts);
      for (int j = 0; j < 8; j++) {
        if (statuses[j] == GetStatus.HIT) {
          assertThat(Payloads.verify(keys.get(j), dsts.get(j).flip())).isEqualTo(1);
          hitsAndMisses[0]++;
        } else {
          assertThat(statuses[j]).isEqualTo(GetStatus.MISS);
          assertThat(dsts.get(j).position()).as("a missed block's buffer is untouched").isZero();
          hitsAndMisses[1]++;
        }
      }
    }
  }
}
