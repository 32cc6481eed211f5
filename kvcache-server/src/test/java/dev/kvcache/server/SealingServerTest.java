package dev.kvcache.server;

import static dev.kvcache.server.BlockApiTest.key;
import static dev.kvcache.testkit.TestBytes.indexOf;
import static dev.kvcache.testkit.TestBytes.random;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.seal.Sealer;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Namespaces sealed at rest through the server's settings ({@code kvcache.sealing.*}): their blocks
 * are in no file of the disk tier as they were put, read back after a restart, keep reading after
 * a new master key is added, and are misses (counted, never other bytes) under a wrong key; the
 * master keys come from a file or the environment, and a setting the server cannot keep stops the
 * start with the setting named.
 */
class SealingServerTest {

  private static final int BLOCK = 64 << 10;
  private static final int BLOCKS = 6;
  /** The seeds of the plain namespace's blocks, apart from the sealed one's. */
  private static final int PLAIN = 1000;

  @TempDir Path dir;

  /** A master key entry: {@code id} and 32 bytes drawn from {@code seed}. */
  private static String masterKey(int id, int seed) {
    byte[] k = new byte[32];
    new Random(seed).nextBytes(k);
    return id + ":" + Base64.getEncoder().encodeToString(k);
  }

  private Map<String, String> settings(String keys) throws IOException {
    Path file = dir.resolve("master-keys");
    Files.writeString(file, keys + "\n");
    Map<String, String> s = new HashMap<>();
    s.put("kvcache.namespaces", "default,secret");
    s.put("kvcache.sealing.namespaces", "secret");
    s.put("kvcache.sealing.master-keys-file", file.toString());
    s.put("kvcache.cache.durability", "write_through");
    return s;
  }

  /** Whether any file under the disk tier's directory holds a stretch of {@code block}. */
  private static boolean onDisk(Path tier, byte[] block) throws IOException {
    byte[] stretch = Arrays.copyOfRange(block, BLOCK / 2, BLOCK / 2 + 256);
    try (Stream<Path> files = Files.walk(tier)) {
      for (Path f : (Iterable<Path>) files.filter(Files::isRegularFile)::iterator) {
        if (indexOf(Files.readAllBytes(f), stretch) >= 0) {
          return true;
        }
      }
    }
    return false;
  }

  /** Puts blocks {@code from} to {@code to - 1} of {@code namespace}, block i of seed base + i. */
  private static void putAll(TestServer server, String namespace, int from, int to, int base)
      throws Exception {
    for (int i = from; i < to; i++) {
      assertThat(server.put(namespace, key(i), random(BLOCK, base + i)).statusCode())
          .as(namespace + " block " + i).isEqualTo(201);
    }
  }

  /** Blocks {@code from} to {@code to - 1} of {@code namespace} read back, of seed base + i. */
  private static void assertReads(TestServer server, String namespace, int from, int to,
      int base) throws Exception {
    for (int i = from; i < to; i++) {
      HttpResponse<byte[]> got = server.get(namespace, key(i));
      assertThat(got.statusCode()).as(namespace + " block " + i).isEqualTo(200);
      assertThat(got.body()).isEqualTo(random(BLOCK, base + i));
    }
  }

  @Test
  void sealedBlocksAreNeverPlainOnDiskAndReadBackAfterARestartAndARotation() throws Exception {
    Path tier = dir.resolve("tier");
    try (TestServer server = TestServer.start(tier, settings(masterKey(1, 1)))) {
      putAll(server, "secret", 0, BLOCKS, 0);
      putAll(server, "default", 0, BLOCKS, PLAIN);
    }
    for (int i = 0; i < BLOCKS; i++) {
      // the search finds a block that is there
      assertThat(onDisk(tier, random(BLOCK, PLAIN + i))).as("default's block " + i).isTrue();
      assertThat(onDisk(tier, random(BLOCK, i))).as("secret's block " + i).isFalse();
    }
    try (TestServer server = TestServer.start(tier, settings(masterKey(1, 1)))) {
      assertReads(server, "secret", 0, BLOCKS, 0); // from disk: RAM starts empty
    }

    // a second key seals new blocks; the first still opens what it sealed
    try (TestServer server = TestServer.start(tier,
        settings(masterKey(1, 1) + "\n" + masterKey(2, 2)))) {
      putAll(server, "secret", BLOCKS, 2 * BLOCKS, 0);
    }
    assertThat(Sealer.providerName()).as("the server seals through Conscrypt")
        .isEqualTo("Conscrypt");
    try (TestServer server = TestServer.start(tier, settings(masterKey(2, 2)))) {
      assertReads(server, "secret", BLOCKS, 2 * BLOCKS, 0);
      for (int i = 0; i < BLOCKS; i++) { // sealed under key 1, which is no longer given
        assertThat(server.get("secret", key(i)).statusCode()).as("block " + i).isEqualTo(404);
      }
      assertThat(server.metrics()).contains("kvcache_seal_failures_total{tier=\"disk\"} "
          + (double) BLOCKS);
    }
  }

  @Test
  void aWrongMasterKeyReadsMissesNeverOtherBytes() throws Exception {
    Path tier = dir.resolve("tier");
    try (TestServer server = TestServer.start(tier, settings(masterKey(1, 1)))) {
      putAll(server, "secret", 0, BLOCKS, 0);
    }
    try (TestServer server = TestServer.start(tier, settings(masterKey(1, 9)))) {
      for (int i = 0; i < BLOCKS; i++) {
        assertThat(server.get("secret", key(i)).statusCode()).as("block " + i).isEqualTo(404);
      }
      assertThat(server.metrics()).contains("kvcache_seal_failures_total{tier=\"disk\"} "
          + (double) BLOCKS);
    }
  }

  @Test
  void aRemovedNamespaceIsGoneFromEveryTierItsSaltFirstAndTheOthersStay() throws Exception {
    Path tier = dir.resolve("tier");
    try (TestServer server = TestServer.start(tier, settings(masterKey(1, 1)))) {
      putAll(server, "secret", 0, BLOCKS, 0);
      putAll(server, "default", 0, BLOCKS, PLAIN);
      HttpResponse<byte[]> removed = server.send(
          HttpRequest.newBuilder(server.uri("/v1/namespaces/secret")).DELETE());
      assertThat(removed.statusCode()).isEqualTo(200);
      assertThat(new String(removed.body(), StandardCharsets.UTF_8)).isEqualTo(
          "{\"namespace\":\"secret\",\"blocks\":{\"ram\":" + BLOCKS + ",\"disk\":" + BLOCKS
              + "}}");
      assertThat(tier.resolve("salts")).isEmptyDirectory();
      for (int i = 0; i < BLOCKS; i++) {
        assertThat(server.get("secret", key(i)).statusCode()).as("block " + i).isEqualTo(404);
      }
      assertReads(server, "default", 0, BLOCKS, PLAIN);
      assertThat(server.send(HttpRequest.newBuilder(server.uri("/v1/namespaces/ghost")).DELETE())
          .statusCode()).isEqualTo(404);
    }
    try (TestServer server = TestServer.start(tier, settings(masterKey(1, 1)))) {
      for (int i = 0; i < BLOCKS; i++) {
        assertThat(server.get("secret", key(i)).statusCode()).as("after a restart").isEqualTo(404);
      }
      assertReads(server, "default", 0, BLOCKS, PLAIN);
    }
  }


  @Test
  void masterKeysFromTheEnvironment() throws Exception {
    Path tier = dir.resolve("tier");
    Map<String, String> s = new HashMap<>();
    s.put("kvcache.namespaces", "secret");
    s.put("kvcache.sealing.namespaces", "secret");
    s.put("kvcache.cache.disk-dir", tier.toString());
    s.put("kvcache.cache.ram-bytes", "64MiB");
    s.put("kvcache.cache.durability", "write_through");
    try (TestServer server = TestServer.startChild(s,
        Map.of("KVCACHE_SEALING_MASTER_KEYS", masterKey(3, 3)))) {
      assertThat(server.put("secret", key(1), random(BLOCK, 1)).statusCode()).isEqualTo(201);
      assertThat(server.get("secret", key(1)).body()).isEqualTo(random(BLOCK, 1));
    }
    assertThat(onDisk(tier, random(BLOCK, 1))).isFalse();
    assertThat(Files.list(tier.resolve("salts")).count()).as("the namespace's salt").isEqualTo(1);
  }

  @Test
  void settingsTheServerCannotKeepAreNamed() throws Exception {
    Map<String, String> s = settings(masterKey(1, 1));
    s.put("kvcache.sealing.namespaces", "ghost");
    assertStartFails(s, "kvcache.sealing.namespaces: 'ghost' is not one of kvcache.namespaces");

    s = settings(masterKey(1, 1));
    s.remove("kvcache.sealing.master-keys-file");
    assertStartFails(s, "need master keys: set kvcache.sealing.master-keys-file");

    s = settings(masterKey(1, 1));
    s.put("kvcache.sealing.master-keys", masterKey(2, 2));
    assertStartFails(s, "has master keys given twice");

    s = settings(masterKey(1, 1));
    s.put("kvcache.sealing.namespaces", "");
    assertStartFails(s, "kvcache.sealing.master-keys-file is set but kvcache.sealing.namespaces"
        + " is empty");

    s = settings("1:c2hvcnQ=");
    assertStartFails(s, "kvcache.sealing.master-keys-file: " + dir.resolve("master-keys")
        + ": master key 1 is 5 bytes; it must be 32");

    s = settings(masterKey(1, 1));
    s.put("kvcache.sealing.master-keys-file", dir.resolve("absent").toString());
    assertStartFails(s, "kvcache.sealing.master-keys-file: cannot read " + dir.resolve("absent"));

    s = settings(masterKey(1, 1));
    s.put("kvcache.cache.disk-dir", "");
    assertStartFails(s, "'kvcache.sealing.namespaces' need a tier below RAM");
  }

  private void assertStartFails(Map<String, String> settings, String message) {
    Path tier = dir.resolve("refused");
    Map<String, String> s = new HashMap<>(settings);
    s.putIfAbsent("kvcache.cache.disk-dir", tier.toString());
    assertThatThrownBy(() -> TestServer.start(tier, s).close()).as(message)
        .hasStackTraceContaining(message);
  }
}
