package dev.kvcache.server;

import static dev.kvcache.server.BlockApiTest.body;
import static dev.kvcache.server.BlockApiTest.key;
import static dev.kvcache.testkit.TestBytes.random;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.server.local.ClientFileMaps;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A client on this host has the server copy pinned blocks into a file of its own: the blocks land
 * whole where it asked, and nothing is written into a file where it did not first write its pin's
 * token, nor into the server's own files; a block damaged in RAM is answered damaged.
 */
class LeaseCopiesTest {

  private static final int SLOT = 128 << 10;

  @TempDir Path dir;
  @TempDir Path shm;
  @TempDir Path client;

  private final byte[][] blocks = {random(3000, 1), random(SLOT, 2), random(70_000, 3)};

  /** The lease and copy token of a pinned lookup of keys 1 to 3 from this host. */
  private record Lease(String id, String token) {}

  private Lease pinAll(TestServer server) throws Exception {
    for (int i = 0; i < blocks.length; i++) {
      server.put("default", key(i + 1), blocks[i]);
    }
    HttpResponse<byte[]> found = post(server, "/v1/namespaces/default/lookup",
        "{\"keys\":[\"" + key(1) + "\",\"" + key(2) + "\",\"" + key(3) + "\"],\"pin_ms\":10000,"
            + "\"shared_memory\":true}");
    assertThat(found.statusCode()).as(body(found)).isEqualTo(200);
    return new Lease(field(body(found), "lease"), field(body(found), "copy_token"));
  }

  private static String field(String json, String name) {
    Matcher m = Pattern.compile("\"" + name + "\":\"([0-9a-f]+)\"").matcher(json);
    assertThat(m.find()).as(name + " in " + json).isTrue();
    return m.group(1);
  }

  private static HttpResponse<byte[]> post(TestServer server, String path, String json)
      throws Exception {
    return server.send(HttpRequest.newBuilder(server.uri(path))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json)));
  }

  private static HttpResponse<byte[]> copy(TestServer server, Lease lease, Path file,
      String pairs) throws Exception {
    return post(server, "/v1/namespaces/default/leases/" + lease.id() + "/copy-into",
        "{\"file\":\"" + file + "\",\"token\":\"" + lease.token() + "\",\"blocks\":[" + pairs + "]}");
  }

  /**
   * A file of {@code slots} slots of random bytes, each slot of {@code marked} marked with the
   * token for any of the blocks.
   */
  private Path target(int slots, Lease lease, int... marked) throws Exception {
    Path file = client.resolve("host-buffer");
    Files.write(file, random(slots * SLOT, 99));
    for (int slot : marked) {
      for (byte[] block : blocks) {
        mark(file, lease, (long) slot * SLOT, block.length);
      }
    }
    return file;
  }

  /**
   * Writes the token where a client marks the {@code length} bytes at {@code offset} as its own:
   * in the last 16 bytes and at the start of each 4 KiB before those.
   */
  private static void mark(Path file, Lease lease, long offset, int length) throws Exception {
    byte[] token = HexFormat.of().parseHex(lease.token());
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
      for (long at = offset; at <= offset + length - 2 * token.length; at += 4096) {
        ch.write(ByteBuffer.wrap(token), at);
      }
      ch.write(ByteBuffer.wrap(token), offset + length - token.length);
    }
  }

  /** Where the server's RAM in shared memory holds a block. */
  private record InRam(Path file, long offset) {}

  /** Where a pinned lookup of {@code key} from this host says the server's RAM holds it. */
  private static InRam inRam(TestServer server, String key) throws Exception {
    HttpResponse<byte[]> found = post(server, "/v1/namespaces/default/lookup",
        "{\"keys\":[\"" + key + "\"],\"pin_ms\":10000,\"shared_memory\":true}");
    Matcher slice = Pattern.compile("\"file\":\"([^\"]+)\",\"offset\":(\\d+)")
        .matcher(body(found));
    assertThat(slice.find()).as(body(found)).isTrue();
    return new InRam(Path.of(slice.group(1)), Long.parseLong(slice.group(2)));
  }

  private static byte[] slot(byte[] file, int slot, int length) {
    return Arrays.copyOfRange(file, slot * SLOT, slot * SLOT + length);
  }

  @Test
  void pinnedBlocksLandWholeWhereTheClientAsked() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      Lease lease = pinAll(server);
      Path file = target(4, lease, 3, 0, 2);
      byte[] before = Files.readAllBytes(file);

      HttpResponse<byte[]> copied = copy(server, lease, file,
          "[0," + 3 * SLOT + "],[1,0],[2," + 2 * SLOT + "]");

      assertThat(copied.statusCode()).as(body(copied)).isEqualTo(200);
      assertThat(body(copied)).isEqualTo("{\"blocks\":[\"copied\",\"copied\",\"copied\"]}");
      byte[] after = Files.readAllBytes(file);
      assertThat(slot(after, 3, blocks[0].length)).isEqualTo(blocks[0]);
      assertThat(slot(after, 0, blocks[1].length)).isEqualTo(blocks[1]);
      assertThat(slot(after, 2, blocks[2].length)).isEqualTo(blocks[2]);
      assertThat(slot(after, 1, SLOT)).as("a slot not asked for").isEqualTo(slot(before, 1, SLOT));
      assertThat(Arrays.copyOfRange(after, 3 * SLOT + blocks[0].length, 4 * SLOT))
          .as("past the end of a block").isEqualTo(
              Arrays.copyOfRange(before, 3 * SLOT + blocks[0].length, 4 * SLOT));
    }
  }

  @Test
  void aFileReplacedUnderItsPathIsWrittenNotTheOneMappedBefore() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      Lease lease = pinAll(server);
      Path first = target(2, lease, 0);
      assertThat(body(copy(server, lease, first, "[0,0]"))).contains("copied");
      // the server keeps its mapping of the first file; a new file takes its path
      Path moved = client.resolve("first-moved");
      Files.move(first, moved);
      Path second = target(2, lease, 1);
      assertThat(second).isEqualTo(first);

      HttpResponse<byte[]> copied = copy(server, lease, second, "[1," + SLOT + "]");
      assertThat(body(copied)).isEqualTo("{\"blocks\":[\"copied\"]}");
      assertThat(slot(Files.readAllBytes(second), 1, blocks[1].length)).isEqualTo(blocks[1]);
      assertThat(slot(Files.readAllBytes(moved), 1, blocks[1].length))
          .as("the file mapped before").isNotEqualTo(blocks[1]);

      ClientFileMaps maps = server.context.getBean(ClientFileMaps.class);
      maps.sweep();
      assertThat(maps.mapped()).as("the file its path names is kept mapped").isEqualTo(1);
      Files.delete(second);
      maps.sweep();
      assertThat(maps.mapped()).as("a deleted file is let go of").isZero();
    }
  }

  @Test
  void nothingIsWrittenUnlessTheTokenIsAtEveryOffset() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      Lease lease = pinAll(server);
      Path file = target(3, lease, 0); // slot 1 lacks the token
      byte[] before = Files.readAllBytes(file);

      HttpResponse<byte[]> missing = copy(server, lease, file, "[0,0],[2," + SLOT + "]");
      assertThat(missing.statusCode()).isEqualTo(403);
      assertThat(body(missing)).contains("token-not-in-file").contains("offset " + SLOT);

      Lease other = new Lease(lease.id(), "00".repeat(16));
      HttpResponse<byte[]> wrong = copy(server, other, file, "[0,0]");
      assertThat(wrong.statusCode()).isEqualTo(403);
      assertThat(body(wrong)).contains("bad-copy-token");
      HttpResponse<byte[]> plain = post(server, "/v1/namespaces/default/lookup",
          "{\"keys\":[\"" + key(1) + "\"],\"pin_ms\":10000}");
      assertThat(body(plain)).as("a lookup without shared memory").doesNotContain("copy_token");
      HttpResponse<byte[]> untokened =
          copy(server, new Lease(field(body(plain), "lease"), lease.token()), file, "[0,0]");
      assertThat(untokened.statusCode()).isEqualTo(403);
      assertThat(body(untokened)).contains("bad-copy-token").contains("no copy_token");
      assertThat(Files.readAllBytes(file)).as("the file, untouched").isEqualTo(before);

      assertThat(copy(server, lease, file, "[0," + (3 * SLOT - 100) + "]").statusCode())
          .as("past the end of the file").isEqualTo(400);
      assertThat(copy(server, lease, file, "[3,0]").statusCode()).as("no block 3").isEqualTo(400);
      assertThat(copy(server, lease, client.resolve("none"), "[0,0]").statusCode())
          .isEqualTo(404);
      assertThat(copy(server, new Lease("ab".repeat(16), lease.token()), file, "[0,0]")
          .statusCode()).as("no such lease").isEqualTo(404);
      assertThat(Files.readAllBytes(file)).as("the file, untouched").isEqualTo(before);
    }
  }

  @Test
  void aPlaceIsWrittenOnlyIfTheClientMarkedEveryPageOfIt() throws Exception {
    try (TestServer server = TestServer.start(dir)) {
      Lease lease = pinAll(server);
      // block 2 (index 1) fills a slot: marked at its start only, as a client that would have
      // the server write past its own bytes over another's in the same file
      Path file = target(2, lease);
      byte[] token = HexFormat.of().parseHex(lease.token());
      try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
        ch.write(ByteBuffer.wrap(token), SLOT);
      }
      byte[] before = Files.readAllBytes(file);
      HttpResponse<byte[]> startOnly = copy(server, lease, file, "[1," + SLOT + "]");
      assertThat(startOnly.statusCode()).isEqualTo(403);
      assertThat(body(startOnly)).contains("token-not-in-file").contains("offset " + (SLOT + 4096));
      assertThat(Files.readAllBytes(file)).as("the file, untouched").isEqualTo(before);

      // every page marked but the place's last bytes
      mark(file, lease, SLOT, blocks[1].length);
      try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
        ch.write(ByteBuffer.wrap(new byte[16]), 2L * SLOT - 16);
      }
      before = Files.readAllBytes(file);
      HttpResponse<byte[]> noEnd = copy(server, lease, file, "[1," + SLOT + "]");
      assertThat(noEnd.statusCode()).isEqualTo(403);
      assertThat(body(noEnd)).contains("offset " + (2 * SLOT - 16));
      assertThat(Files.readAllBytes(file)).as("the file, untouched").isEqualTo(before);

      mark(file, lease, SLOT, blocks[1].length);
      HttpResponse<byte[]> marked = copy(server, lease, file, "[1," + SLOT + "]");
      assertThat(body(marked)).isEqualTo("{\"blocks\":[\"copied\"]}");
      assertThat(slot(Files.readAllBytes(file), 1, SLOT)).isEqualTo(blocks[1]);
    }
  }

  @Test
  void theServersOwnFilesAreRefusedByAnyName() throws Exception {
    try (TestServer server = TestServer.start(dir,
        Map.of("kvcache.cache.ram-shared-memory-dir", shm.toString()))) {
      Lease lease = pinAll(server);
      Path ramFile = inRam(server, key(1)).file();
      // the server's RAM file, marked where block 0 would go, as a client's PUT could mark it
      mark(ramFile, lease, 0, blocks[0].length);
      byte[] before = Files.readAllBytes(ramFile);

      Path symlink = Files.createSymbolicLink(client.resolve("by-symlink"), ramFile);
      Path hardLink = Files.createLink(client.resolve("by-hard-link"), ramFile);
      for (Path name : new Path[] {ramFile, symlink, hardLink}) {
        HttpResponse<byte[]> own = copy(server, lease, name, "[0,0]");
        assertThat(own.statusCode()).as(name + ": " + body(own)).isEqualTo(403);
        assertThat(body(own)).contains("own-file");
      }
      assertThat(Files.readAllBytes(ramFile)).as("the server's RAM, untouched").isEqualTo(before);
    }
  }

  @Test
  void aDamagedBlockIsAnsweredDamaged() throws Exception {
    try (TestServer server = TestServer.start(dir,
        Map.of("kvcache.cache.ram-shared-memory-dir", shm.toString()))) {
      Lease lease = pinAll(server);
      InRam block2 = inRam(server, key(2));
      Path ramFile = block2.file();
      long at = block2.offset();

      try (FileChannel ch = FileChannel.open(ramFile, StandardOpenOption.WRITE)) {
        // block 2 (index 1) damaged where the server keeps it
        ch.write(ByteBuffer.wrap(new byte[] {(byte) ~blocks[1][500]}), at + 500);
      }

      Path file = target(3, lease, 0, 1, 2);
      HttpResponse<byte[]> copied = copy(server, lease, file,
          "[0,0],[1," + SLOT + "],[2," + 2 * SLOT + "]");
      assertThat(copied.statusCode()).as(body(copied)).isEqualTo(200);
      assertThat(body(copied)).isEqualTo("{\"blocks\":[\"copied\",\"damaged\",\"copied\"]}");
      byte[] after = Files.readAllBytes(file);
      assertThat(slot(after, 0, blocks[0].length)).isEqualTo(blocks[0]);
      assertThat(slot(after, 2, blocks[2].length)).isEqualTo(blocks[2]);
    }
  }
}
