package dev.kvcache.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.BlockWriter;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.codec.BlockCodec;
import dev.kvcache.codec.Filter;
import dev.kvcache.server.TestServer;
import dev.kvcache.testkit.Payloads;
import dev.kvcache.testkit.TestBytes;
import dev.kvcache.tiered.KvCacheConfig;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class RemoteTierTest {

  static final String SECRET = "k".repeat(40);

  @TempDir Path dir;

  @ParameterizedTest
  @ValueSource(ints = {1, 256 * 1024, 2 << 20, 8 << 20})
  void everySizeClassRoundTrips(int length) {
    try (TestServer server = TestServer.start(dir);
        RemoteTier remote = new RemoteTier(RemoteTierConfig.builder()
            .server("127.0.0.1", server.port()).maxBlockBytes(8 << 20).build())) {
      BlockKey key = Payloads.key(length);
      ByteBuffer block = length < Payloads.HEADER_BYTES
          ? ByteBuffer.allocateDirect(length).put(0, (byte) 42)
          : Payloads.of(key, 3, length);
      assertThat(remote.put(key, block)).isEqualTo(PutStatus.STORED);
      ByteBuffer dst = ByteBuffer.allocateDirect(length + 100);
      assertThat(remote.getInto(key, dst)).isEqualTo(GetStatus.HIT);
      assertThat(dst.position()).isEqualTo(length);
      assertThat(dst.flip()).isEqualTo(block.duplicate().clear());
      try (BlockLease lease = remote.get(key)) {
        assertThat(lease.bytes()).isEqualTo(block.duplicate().clear());
      }
    }
  }

  /** Half floats of small magnitude, in a direct buffer: a byte shuffle lets LZ4 shrink them. */
  @Test
  void withAWireCodecBlocksTravelEncodedBothWaysAndArriveWhole() {
    BlockCodec codec = BlockCodec.builder().filter(Filter.BYTE_SHUFFLE_2).build();
    try (TestServer server = TestServer.start(dir,
            Map.of("kvcache.wire-codec", "lz4", "kvcache.wire-codec-filter", "byte_shuffle_2"));
        RemoteTier coded = new RemoteTier(RemoteTierConfig.builder()
            .server("127.0.0.1", server.port()).maxBlockBytes(8 << 20).wireCodec(codec).build());
        RemoteTier plain = new RemoteTier(RemoteTierConfig.builder()
            .server("127.0.0.1", server.port()).maxBlockBytes(8 << 20).build())) {
      for (int length : new int[] {1, 256 << 10, (3 << 20) + 3}) {
        BlockKey key = Payloads.key(length);
        ByteBuffer block = TestBytes.halfFloatsDirect(length, length);
        assertThat(coded.put(key, block)).isEqualTo(PutStatus.STORED);
        ByteBuffer dst = ByteBuffer.allocateDirect(length + 10).position(7);
        assertThat(coded.getInto(key, dst)).isEqualTo(GetStatus.HIT);
        assertThat(dst.position()).isEqualTo(7 + length);
        assertThat(dst.flip().position(7)).isEqualTo(block);
        try (BlockLease lease = coded.get(key)) {
          assertThat(lease.bytes()).isEqualTo(block);
        }
        ByteBuffer asStored = ByteBuffer.allocateDirect(length);
        assertThat(plain.getInto(key, asStored)).isEqualTo(GetStatus.HIT);
        assertThat(asStored.flip()).as("stored decoded, read as it is").isEqualTo(block);
      }
      BlockKey written = Payloads.key(99);
      ByteBuffer parts = TestBytes.halfFloatsDirect(1 << 20, 99);
      try (BlockWriter writer = coded.writer(written, 1 << 20)) {
        for (int at = 0; at < 1 << 20; at += 16 << 10) {
          writer.write(parts.duplicate().position(at).limit(at + (16 << 10)));
        }
        assertThat(writer.commit()).isEqualTo(PutStatus.STORED);
      }
      ByteBuffer writtenBack = ByteBuffer.allocateDirect(1 << 20);
      assertThat(plain.getInto(written, writtenBack)).isEqualTo(GetStatus.HIT);
      assertThat(writtenBack.flip()).as("written in parts, sent encoded").isEqualTo(parts);
      assertThat(server.wireContainers("received")).as("puts sent encoded").isEqualTo(4);
      assertThat(server.wireContainers("sent")).as("gets answered encoded").isEqualTo(6);
      ByteBuffer small = ByteBuffer.allocateDirect(256 << 10).position(3);
      assertThat(coded.getInto(Payloads.key(256 << 10), small))
          .isEqualTo(GetStatus.BUFFER_TOO_SMALL);
      assertThat(small.position()).isEqualTo(3);
      assertThat(coded.getInto(Payloads.key(77), ByteBuffer.allocateDirect(10)))
          .isEqualTo(GetStatus.MISS);
    }
  }

  @Test
  void aWriterStreamsItsPartsAndStoresNothingUnlessCommitted() throws Exception {
    try (TestServer server = TestServer.start(dir,
            Map.of("kvcache.cache.max-block-bytes", "1MiB"));
        RemoteTier remote = new RemoteTier(RemoteTierConfig.builder()
            .server("127.0.0.1", server.port()).maxBlockBytes(8 << 20).build())) {
      BlockKey key = Payloads.key(1);
      ByteBuffer block = Payloads.of(key, 5, 1 << 20);
      BlockWriter abandoned = remote.writer(key, 1 << 20);
      abandoned.write(block.duplicate().limit(1 << 19));
      abandoned.close();
      assertThat(remote.contains(key)).as("a writer closed without its commit").isFalse();

      long before = server.ramBytesUsed();
      try (BlockWriter writer = remote.writer(key, 1 << 20)) {
        for (int at = 0; at < 1 << 20; at += 100_000) {
          writer.write(block.duplicate().position(at).limit(Math.min(1 << 20, at + 100_000)));
        }
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (server.ramBytesUsed() < before + (1 << 20) && System.nanoTime() < deadline) {
          Thread.sleep(10);
        }
        assertThat(server.ramBytesUsed()).as("the request is under way: the server holds its room")
            .isGreaterThanOrEqualTo(before + (1 << 20));
        assertThat(remote.contains(key)).as("not before its commit").isFalse();
        assertThat(writer.commit()).isEqualTo(PutStatus.STORED);
      }
      ByteBuffer dst = ByteBuffer.allocateDirect(1 << 20);
      assertThat(remote.getInto(key, dst)).isEqualTo(GetStatus.HIT);
      assertThat(Payloads.verify(key, dst.flip())).isEqualTo(5);

      // larger than the server's largest block: it answers 413 while the parts are still coming
      BlockKey large = Payloads.key(2);
      try (BlockWriter writer = remote.writer(large, 4 << 20)) {
        ByteBuffer part = ByteBuffer.allocateDirect(64 << 10);
        while (writer.remaining() > 0) {
          writer.write(part.clear().limit(Math.min(part.capacity(), writer.remaining())));
        }
        assertThat(writer.commit()).isEqualTo(PutStatus.REJECTED_TOO_LARGE);
      }
      assertThat(remote.contains(large)).isFalse();
      assertThat(remote.put(Payloads.key(3), Payloads.of(Payloads.key(3), 1, 1000)))
          .as("the connection serves on").isEqualTo(PutStatus.STORED);
    }
  }

  @Test
  void aClientWithAWireCodecReadsFromAServerThatAnswersBlocksAsTheyAre() {
    BlockCodec codec = BlockCodec.builder().build();
    try (TestServer server = TestServer.start(dir);
        RemoteTier coded = new RemoteTier(RemoteTierConfig.builder()
            .server("127.0.0.1", server.port()).maxBlockBytes(8 << 20).wireCodec(codec).build())) {
      BlockKey key = Payloads.key(5);
      ByteBuffer block = Payloads.of(key, 2, 1 << 20);
      assertThat(coded.put(key, block)).isEqualTo(PutStatus.STORED);
      ByteBuffer dst = ByteBuffer.allocateDirect(1 << 20);
      assertThat(coded.getInto(key, dst)).isEqualTo(GetStatus.HIT);
      assertThat(Payloads.verify(key, dst.flip())).isEqualTo(2);
      assertThat(server.wireContainers("sent")).isZero();
    }
  }

  @Test
  void aBatchReadFillsEachBufferAskingAgainForWhatTheServerLeftForLater() {
    int block = 300 << 10;
    try (TestServer server = TestServer.start(dir, Map.of("kvcache.cache.max-block-bytes", "1MiB",
            "kvcache.max-batch-bytes", 1 << 20)); // three blocks per answer at most
        RemoteTier remote = new RemoteTier(RemoteTierConfig.builder()
            .server("127.0.0.1", server.port()).maxBlockBytes(1 << 20).build())) {
      List<BlockKey> keys = new ArrayList<>();
      List<ByteBuffer> dsts = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        BlockKey key = Payloads.key(i);
        assertThat(remote.put(key, Payloads.of(key, 5, block))).isEqualTo(PutStatus.STORED);
        keys.add(key);
        dsts.add(ByteBuffer.allocateDirect(block));
      }
      keys.add(Payloads.key(99));
      dsts.add(ByteBuffer.allocateDirect(block));
      keys.add(Payloads.key(3));
      dsts.add(ByteBuffer.allocateDirect(block - 1));

      GetStatus[] statuses = remote.getAllInto(keys, dsts);

      for (int i = 0; i < 10; i++) {
        assertThat(statuses[i]).as("block %d", i).isEqualTo(GetStatus.HIT);
        assertThat(Payloads.verify(keys.get(i), dsts.get(i).flip())).isEqualTo(5);
      }
      assertThat(statuses[10]).isEqualTo(GetStatus.MISS);
      assertThat(statuses[11]).isEqualTo(GetStatus.BUFFER_TOO_SMALL);
      assertThat(dsts.get(11).position()).isZero();
      assertThatThrownBy(() -> remote.getAllInto(keys, dsts.subList(0, 3)))
          .isInstanceOf(IllegalArgumentException.class);
    }
  }

  @Test
  void aRefusedTokenOrAnUnknownNamespaceIsAnErrorNotAMiss() {
    try (TestServer server = TestServer.start(dir, Map.of("kvcache.cache.max-block-bytes", "1MiB",
        "kvcache.auth.tokens.engine.secret", SECRET,
        "kvcache.auth.tokens.engine.read", "default",
        "kvcache.auth.tokens.engine.write", "default"))) {
      BlockKey key = Payloads.key(1);
      try (RemoteTier noToken = new RemoteTier(RemoteTierConfig.builder()
          .server("127.0.0.1", server.port()).build())) {
        assertThatThrownBy(() -> noToken.getInto(key, ByteBuffer.allocate(10)))
            .isInstanceOf(RemoteTierException.class)
            .hasMessageContaining("answered 401")
            .satisfies(e -> assertThat(((RemoteTierException) e).status()).isEqualTo(401));
        assertThatThrownBy(() -> noToken.put(key, Payloads.of(key, 1, 100)))
            .isInstanceOf(RemoteTierException.class);
        assertThatThrownBy(() -> noToken.getAllInto(List.of(key), List.of(ByteBuffer.allocate(10))))
            .isInstanceOf(RemoteTierException.class)
            .hasMessageContaining("answered 401");
      }
      try (RemoteTier outOfScope = new RemoteTier(RemoteTierConfig.builder()
          .server("127.0.0.1", server.port()).namespace("other").token(SECRET).build())) {
        assertThatThrownBy(() -> outOfScope.lookupPrefix(List.of(key)))
            .isInstanceOf(RemoteTierException.class)
            .hasMessageContaining("answered 403");
      }
      try (RemoteTier engine = new RemoteTier(RemoteTierConfig.builder()
          .server("127.0.0.1", server.port()).token(SECRET).build())) {
        assertThat(engine.put(key, Payloads.of(key, 1, 100))).isEqualTo(PutStatus.STORED);
        assertThat(engine.contains(key)).isTrue();
      }
    }
  }

  @Test
  void anUnknownNamespaceIsAnError() {
    try (TestServer server = TestServer.start(dir);
        RemoteTier unknown = new RemoteTier(RemoteTierConfig.builder()
            .server("127.0.0.1", server.port()).namespace("nowhere").build())) {
      assertThatThrownBy(() -> unknown.get(Payloads.key(1)))
          .isInstanceOf(RemoteTierException.class)
          .hasMessageContaining("answered 404")
          .hasMessageContaining("unknown-namespace");
    }
  }

  @Test
  void anUnreachableServerMeansMissesAndDroppedPuts() {
    try (RemoteTier remote = new RemoteTier(RemoteTierConfig.builder()
        .server("127.0.0.1", 1).build())) {
      BlockKey key = Payloads.key(1);
      assertThat(remote.getInto(key, ByteBuffer.allocate(10))).isEqualTo(GetStatus.MISS);
      assertThat(remote.put(key, Payloads.of(key, 1, 100))).isEqualTo(PutStatus.NOT_ADMITTED);
      assertThat(remote.contains(key)).isFalse();
      assertThat(remote.lookupPrefix(List.of(key))).isZero();
    }
  }

  /** A server that takes connections and bytes but never answers: its requests time out. */
  @Test
  void aServerThatNeverAnswersMeansMissesAfterTheRequestTimeout() throws Exception {
    try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      Thread swallower = new Thread(() -> {
        try (Socket s = silent.accept()) {
          s.getInputStream().transferTo(OutputStream.nullOutputStream());
        } catch (IOException e) {
          // closed by the test
        }
      });
      swallower.setDaemon(true);
      swallower.start();
      try (RemoteTier remote = new RemoteTier(RemoteTierConfig.builder()
          .server("127.0.0.1", silent.getLocalPort())
          .requestTimeout(Duration.ofMillis(300))
          .downBackoff(Duration.ofSeconds(10), Duration.ofSeconds(10))
          .build())) {
        BlockKey key = Payloads.key(1);
        ByteBuffer dst = ByteBuffer.allocateDirect(100);
        long start = System.nanoTime();
        assertThat(remote.getInto(key, dst)).isEqualTo(GetStatus.MISS);
        assertThat(Duration.ofNanos(System.nanoTime() - start))
            .isGreaterThanOrEqualTo(Duration.ofMillis(300)).isLessThan(Duration.ofSeconds(5));
        assertThat(dst.position()).isZero();
        // the server counts as down now: no further request waits for it
        start = System.nanoTime();
        assertThat(remote.put(key, Payloads.of(key, 1, 100))).isEqualTo(PutStatus.NOT_ADMITTED);
        assertThat(remote.contains(key)).isFalse();
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(300));
      }
    }
  }

  /** With {@code remote.wire-codec = lz4}: puts go encoded, gets come back whole either way. */
  @Test
  void ramOverARemoteServerBuiltFromSettings() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      int blocks = 40;
      try (KvCache cache = KvCacheConfig.of(Map.of(
          "ram.bytes", "4MiB",
          "ram.max-block-bytes", "1MiB",
          "lower", "remote",
          "remote.servers", "127.0.0.1:" + server.port(),
          "remote.wire-codec", "lz4")).open()) {
        for (int i = 0; i < blocks; i++) {
          BlockKey key = Payloads.key(i);
          assertThat(cache.put(key, Payloads.of(key, 1, 512 * 1024))).isEqualTo(PutStatus.STORED);
        }
        // 20 MiB through 4 MiB of RAM: most blocks now live only on the server
        for (int i = 0; i < blocks; i++) {
          ByteBuffer dst = ByteBuffer.allocateDirect(512 * 1024);
          assertThat(cache.getInto(Payloads.key(i), dst)).as("block %d", i)
              .isEqualTo(GetStatus.HIT);
          assertThat(Payloads.verify(Payloads.key(i), dst.flip())).isEqualTo(1);
        }
      }
    }
  }

  @Test
  void reStoringAKeyKeepsTheServersCopyOtherEnginesRead() throws Exception {
    try (TestServer server = TestServer.start(dir);
        RemoteTier other = new RemoteTier(RemoteTierConfig.builder()
            .server("127.0.0.1", server.port()).build());
        KvCache engine = KvCacheConfig.of(Map.of(
            "ram.bytes", "4MiB",
            "lower", "remote",
            "remote.servers", "127.0.0.1:" + server.port())).open()) {
      BlockKey key = Payloads.key(77);
      assertThat(other.put(key, Payloads.of(key, 3, 256 * 1024))).isEqualTo(PutStatus.STORED);
      // the engine computes the same prefix again and stores its block: the same bytes
      assertThat(engine.put(key, Payloads.of(key, 3, 256 * 1024))).isEqualTo(PutStatus.STORED);
      ByteBuffer dst = ByteBuffer.allocateDirect(256 * 1024);
      assertThat(other.getInto(key, dst)).as("the server's copy, which other engines read")
          .isEqualTo(GetStatus.HIT);
      assertThat(Payloads.verify(key, dst.flip())).isEqualTo(3);
    }
  }

  @Test
  void ramOverARemoteServerPinsTheServersBlocksUnderItsLease() throws Exception {
    try (TestServer server = TestServer.start(dir);
        RemoteTier direct = new RemoteTier(RemoteTierConfig.builder()
            .server("127.0.0.1", server.port()).build());
        KvCache cache = KvCacheConfig.of(Map.of(
            "ram.bytes", "4MiB",
            "lower", "remote",
            "remote.servers", "127.0.0.1:" + server.port())).open()) {
      List<BlockKey> keys = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        BlockKey key = Payloads.key(900 + i);
        keys.add(key);
        if (i < 6) { // on the server only: the cache's RAM lacks them
          assertThat(direct.put(key, Payloads.of(key, 4, 256 * 1024))).isEqualTo(PutStatus.STORED);
        }
      }
      assertThat(cache.lookupPrefix(keys)).isEqualTo(6);
      try (PrefixPin pin = cache.pinPrefix(keys, Duration.ofSeconds(30))) {
        assertThat(pin.blocks()).isEqualTo(6);
        assertThat(server.leasesOpen()).as("the server holds the six blocks for the pin")
            .isEqualTo(6);
        ByteBuffer dst = ByteBuffer.allocateDirect(256 * 1024);
        for (int i = 0; i < 6; i++) {
          assertThat(pin.getInto(i, dst.clear())).isEqualTo(GetStatus.HIT);
          assertThat(Payloads.verify(keys.get(i), dst.flip())).isEqualTo(4);
        }
      }
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (server.leasesOpen() > 0 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertThat(server.leasesOpen()).as("closing the pin released the lease").isZero();
    }
  }

  @Test
  void aMalformedRemoteSettingIsNamed() {
    assertThatThrownBy(() -> KvCacheConfig.of(Map.of(
        "lower", "remote", "remote.servers", "localhost")).open())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("remote.servers")
        .hasMessageContaining("host:port");
    assertThatThrownBy(() -> KvCacheConfig.of(Map.of("lower", "remote",
        "remote.servers", "localhost:1", "remote.wire-codec-filter", "byte_shuffle_2")).open())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("remote.wire-codec");
    assertThatThrownBy(() -> KvCacheConfig.of(Map.of("lower", "remote",
        "remote.servers", "localhost:1", "remote.wire-codec", "gzip")).open())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("remote.wire-codec");
  }
}
