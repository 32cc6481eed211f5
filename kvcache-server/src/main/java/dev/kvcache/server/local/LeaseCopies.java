package dev.kvcache.server.local;

import dev.kvcache.BlockLease;
import dev.kvcache.PrefixPin;
import dev.kvcache.server.access.Access;
import dev.kvcache.server.access.Access.Right;
import dev.kvcache.server.access.Namespaces;
import dev.kvcache.server.access.SameHost;
import dev.kvcache.server.api.OffLoop;
import dev.kvcache.server.api.PinRegistry;
import dev.kvcache.server.api.ServedBlocks;
import dev.kvcache.server.cache.CacheSettings;
import dev.kvcache.server.errors.ApiException;
import dev.kvcache.wire.Wire;
import io.micronaut.core.annotation.Nullable;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpResponse;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.annotation.Body;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Post;
import io.micronaut.serde.annotation.Serdeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.nio.file.LinkOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.stream.Stream;
import java.util.zip.CRC32C;
import reactor.core.publisher.Mono;

/**
 * Copies of pinned blocks into a file of a client on this host: an engine's host buffer in
 * {@code /dev/shm}, written by the server in one request, with no copy in the client's process.
 *
 * <p>The client shows that it may write every page the server is to write: it writes its pin's
 * {@code copy_token} (random, from the lookup's answer) in the last {@value #TOKEN_BYTES} bytes
 * of each place a block is to go and at the start of each {@value #TOKEN_STRIDE} bytes before
 * those, and the server reads the token at each of those, through its mapping of the
 * file it opened, before it writes anything. A client that can only read a file cannot show that,
 * and a client that marked only the start of a place cannot have the server write past it over
 * bytes of another's, so the server never writes where its client did not. What the server checks
 * is the file it opened ({@link OpenedFile}), not the file a path named before: files of the
 * server's own directories (its RAM's shared memory, its disk tier), by any name, are refused
 * whatever they hold. The server keeps its mapping of the file for the next requests ({@link
 * ClientFileMaps}).
 * The blocks of a request are copied on {@code kvcache.copy-threads} threads ({@link
 * CopyThreads}). Each block's CRC32C is computed piece by piece as the piece is copied, from the same memory; a
 * block whose bytes do not have its checksum is answered {@code damaged}, and its place in the
 * file then holds no block.
 */
@Controller(Wire.NAMESPACES + "{namespace}")
public class LeaseCopies {

  /**
   * Bytes between the tokens a client writes in a block's place, a page: the tokens show that the
   * client has written into every page the server is to write.
   */
  static final int TOKEN_STRIDE = 4096;
  /** Bytes of a copy token. */
  static final int TOKEN_BYTES = 16;

  /** Bytes checked, then copied, at a time: small enough to stay in the CPU's cache between. */
  static final int PIECE_BYTES = 256 << 10;

  /**
   * Where to copy which pinned blocks.
   *
   * @param file the path of the file on this host, such as {@code /dev/shm/name} or {@code
   *     /proc/<pid>/fd/<fd>} for one already unlinked
   * @param token the pin's {@code copy_token}, in hex, written at each block's offset
   * @param blocks pairs of a pinned block's index and its offset in the file
   */
  @Serdeable
  record CopyRequest(@Nullable String file, @Nullable String token,
      @Nullable List<List<Long>> blocks) {}

  /** @param blocks what became of each block, in the request's order */
  @Serdeable
  record CopyResponse(List<CopyOutcome> blocks) {}

  private final Namespaces namespaces;
  private final PinRegistry pins;
  private final ServedBlocks served;
  private final OffLoop offLoop;
  private final List<Path> ownDirectories;
  private final CopyOutcomes counted;
  private final ClientFileMaps maps;
  private final SameHost sameHost;
  private final CopyThreads copies;

  LeaseCopies(Namespaces namespaces, PinRegistry pins, ServedBlocks served, OffLoop offLoop,
      CacheSettings settings, CopyOutcomes counted, ClientFileMaps maps, SameHost sameHost,
      CopyThreads copies) {
    this.sameHost = sameHost;
    this.copies = copies;
    this.namespaces = namespaces;
    this.pins = pins;
    this.served = served;
    this.offLoop = offLoop;
    List<Path> own = new ArrayList<>();
    for (String dir : List.of(settings.getRamSharedMemoryDir(), settings.getDiskDir())) {
      if (!dir.isBlank()) {
        own.add(realPath(Path.of(dir).toAbsolutePath()));
      }
    }
    this.ownDirectories = List.copyOf(own);
    this.counted = counted;
    this.maps = maps;
  }

  /**
   * Copies pinned blocks into the client's file: 200 with each block's {@link CopyOutcome}; 400 for a
   * malformed request, 403 unless the request comes over loopback and the token is in place at
   * every offset (nothing is then written), 404 for a lease that is not open or a file that is
   * not there. Answered on a blocking thread.
   */
  @Access(Right.READ) // the pinned blocks are read into the client's own file
  @Post("/leases/{lease}/copy-into")
  Mono<HttpResponse<CopyResponse>> copyInto(HttpRequest<?> http, String namespace, String lease,
      @Body CopyRequest request) {
    if (!sameHost.contains(http)) {
      throw new ApiException(HttpStatus.FORBIDDEN, "not-this-host",
          "copies into a file are for clients on the server's host (kvcache.same-host)");
    }
    return offLoop.answer(() -> HttpResponse.ok(copy(namespace, lease, request)));
  }

  private CopyResponse copy(String namespace, String lease, CopyRequest request)
      throws IOException {
    namespaces.require(namespace);
    PinRegistry.Entry pinned = pins.find(namespace, lease);
    PrefixPin pin = pinned.pin();
    List<long[]> blocks = blocks(request, pin);
    if (pinned.copyToken() == null) {
      throw new ApiException(HttpStatus.FORBIDDEN, "bad-copy-token",
          "lease " + lease + " has no copy_token: its lookup did not ask for shared memory");
    }
    if (request.token() == null
        || !Arrays.equals(pinned.copyToken(), parseHex(request.token()))) {
      throw new ApiException(HttpStatus.FORBIDDEN, "bad-copy-token",
          "the token is not lease " + lease + "'s copy_token");
    }
    Path file = path(request.file());
    OpenedFile opened = OpenedFile.open(file);
    try (FileChannel ch = opened.channel()) {
      refuseOwn(file, opened);
      long size = ch.size();
      for (long[] b : blocks) {
        long end = b[1] + Math.max(pin.length((int) b[0]), TOKEN_BYTES);
        if (end > size) {
          throw new ApiException(HttpStatus.BAD_REQUEST, "bad-copy",
              "block " + b[0] + " at " + b[1] + " ends at " + end + ", past the end of " + file
                  + " (" + size + " bytes)");
        }
      }
      ClientFileMaps.Mapped m = maps.acquire(request.file(), opened.identity(), ch);
      try {
        long missing = offsetWithoutToken(m, blocks, pin, pinned.copyToken());
        if (missing >= 0) {
          throw new ApiException(HttpStatus.FORBIDDEN, "token-not-in-file",
              "the copy token is not at offset " + missing + " of " + file + ": write it in the"
                  + " last " + TOKEN_BYTES + " bytes of each block's place and at the start of each "
                  + TOKEN_STRIDE + " bytes before those, to show that the place may be written");
        }
        List<CopyOutcome> outcomes = copies.copyAll(blocks.size(), i -> {
          try {
            return copyBlock(pin, (int) blocks.get(i)[0], m, blocks.get(i)[1]);
          } catch (InternalError e) { // the JVM's answer to a fault in a mapping: the file shrank
            throw new ApiException(HttpStatus.CONFLICT, "file-changed",
                file + " shrank while block " + blocks.get(i)[0] + " was copied into it");
          }
        });
        int newlyServed = 0;
        for (int i = 0; i < outcomes.size(); i++) {
          CopyOutcome outcome = outcomes.get(i);
          counted.add(outcome);
          // blocks offered in shared memory counted as served at the lookup
          if (outcome == CopyOutcome.copied && pin.sharedMemory((int) blocks.get(i)[0])
              .filter(s -> s.crc32c().isPresent()).isEmpty()) {
            newlyServed++;
          }
        }
        served.served(namespace, newlyServed);
        return new CopyResponse(outcomes);
      } finally {
        maps.release(m);
      }
    }
  }

  /**
   * The first offset where {@code m} lacks the token, or -1 if it is at every place the client
   * marks: the last {@link #TOKEN_BYTES} bytes of each block's place, and each {@link
   * #TOKEN_STRIDE} bytes from its start before those.
   */
  private static long offsetWithoutToken(ClientFileMaps.Mapped m, List<long[]> blocks,
      PrefixPin pin, byte[] token) {
    ByteBuffer t = ByteBuffer.wrap(token);
    long high = t.getLong(0);
    long low = t.getLong(8);
    for (long[] b : blocks) {
      long last = b[1] + Math.max(pin.length((int) b[0]), TOKEN_BYTES) - TOKEN_BYTES;
      for (long at = b[1]; at <= last - TOKEN_BYTES; at += TOKEN_STRIDE) {
        if (!m.holds(at, high, low)) {
          return at;
        }
      }
      if (!m.holds(last, high, low)) {
        return last;
      }
    }
    return -1;
  }

  /** The request's (index, offset) pairs, checked against the pin. */
  private static List<long[]> blocks(CopyRequest request, PrefixPin pin) {
    if (request.blocks() == null || request.blocks().isEmpty()
        || request.blocks().size() > pin.blocks()) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-copy",
          "the body needs a 'blocks' list of 1 to " + pin.blocks() + " [index, offset] pairs");
    }
    List<long[]> out = new ArrayList<>(request.blocks().size());
    for (List<Long> pair : request.blocks()) {
      if (pair == null || pair.size() != 2 || pair.get(0) == null || pair.get(1) == null
          || pair.get(0) < 0 || pair.get(0) >= pin.blocks() || pair.get(1) < 0) {
        throw new ApiException(HttpStatus.BAD_REQUEST, "bad-copy",
            "block " + pair + ": each must be [index, offset] with an index from 0 to "
                + (pin.blocks() - 1) + " and an offset of 0 or more");
      }
      out.add(new long[] {pair.get(0), pair.get(1)});
    }
    return out;
  }

  /** The absolute path the request names. */
  private static Path path(String name) {
    Path file;
    try {
      file = name == null || name.isBlank() ? null : Path.of(name);
    } catch (InvalidPathException e) {
      file = null;
    }
    if (file == null || !file.isAbsolute()) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-copy",
          "the body needs the absolute path of a 'file' on this host, not " + name);
    }
    return file;
  }

  /**
   * Refuses a file the server opened that is one of its own: one whose name lies in its own
   * directories, or, having other names, is the same file as one there (a hard link).
   */
  private void refuseOwn(Path file, OpenedFile opened) throws IOException {
    for (Path own : ownDirectories) {
      if (opened.realName().startsWith(own)
          || opened.links() > 1 && opened.device() == device(own) && holds(own, opened)) {
        throw new ApiException(HttpStatus.FORBIDDEN, "own-file",
            file + " is a file of the server's own directory " + own);
      }
    }
  }

  /** Whether a file under {@code dir} is {@code file}. */
  private static boolean holds(Path dir, OpenedFile file) throws IOException {
    try (Stream<Path> all = Files.walk(dir)) {
      return all.anyMatch(p -> file.identity().equals(identity(p)));
    }
  }

  private static Object identity(Path p) {
    try {
      return Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS)
          .fileKey();
    } catch (IOException e) {
      return null;
    }
  }

  /**
   * Writes pinned block {@code index} at {@code offset} of {@code m}, computing its CRC32C piece
   * by piece as it writes, while each piece is in the CPU's cache.
   */
  private static CopyOutcome copyBlock(PrefixPin pin, int index, ClientFileMaps.Mapped m,
      long offset) {
    Optional<BlockLease> shared = pin.share(index);
    if (shared.isEmpty()) {
      return CopyOutcome.elsewhere;
    }
    try (BlockLease lease = shared.get()) {
      OptionalInt expected = lease.crc32c();
      if (expected.isEmpty()) {
        return CopyOutcome.elsewhere;
      }
      ByteBuffer bytes = lease.bytes();
      CRC32C crc = new CRC32C();
      for (int at = 0; at < bytes.limit(); ) {
        int n = ClientFileMaps.Mapped.piece(offset + at, Math.min(PIECE_BYTES, bytes.limit() - at));
        ByteBuffer piece = bytes.slice(at, n);
        crc.update(piece.duplicate());
        m.slice(offset + at, n).put(piece);
        at += n;
      }
      return (int) crc.getValue() == expected.getAsInt() ? CopyOutcome.copied : CopyOutcome.damaged;
    }
  }

  private static byte[] parseHex(String hex) {
    try {
      return HexFormat.of().parseHex(hex);
    } catch (IllegalArgumentException e) {
      throw new ApiException(HttpStatus.BAD_REQUEST, "bad-copy", "the token is not hex: " + hex);
    }
  }

  /** The device of {@code path}, or -1 if it is not there yet. */
  private static long device(Path path) {
    try {
      return (Long) Files.getAttribute(path, "unix:dev");
    } catch (IOException e) {
      return -1;
    }
  }

  private static Path realPath(Path path) {
    try {
      return path.toRealPath();
    } catch (IOException e) {
      return path.toAbsolutePath().normalize();
    }
  }
}
