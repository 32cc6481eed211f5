package dev.kvcache.bench.remote;

import dev.kvcache.bench.RotatingFiles;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The floor of a PUT: the least a program does to take a block over HTTP and write it to the
 * device. Each connection has a thread; each request's body is read from the socket into one
 * buffer and written with positional writes to a series of files of {@code --file-bytes}, the
 * oldest deleted past {@code --capacity}, as the disk tier fills super-blocks and drops the oldest
 * ({@link RotatingFiles}).
 * The answer is {@code 201} with no body, so the project's clients drive it as they drive
 * kvcache-server (it takes a PUT to any path). No checksum, no index, no journal, no RAM tier.
 * A connection that opens with the HTTP/2 preface (the Java client's, cleartext with prior
 * knowledge) is served as HTTP/2 ({@link PutFloorH2}).
 *
 * <p>{@code --sync periodic} forces the files written in the last second, once a second (the disk
 * tier's default); {@code always} forces before each answer; {@code none} never. {@code --direct}
 * writes with {@code O_DIRECT} from a buffer aligned to the file system's block, each block padded
 * to a whole number of them, as a disk tier writing past the page cache would.
 *
 * <pre>
 * java -cp kvcache-bench/target/benchmarks.jar dev.kvcache.bench.remote.PutFloorServer \
 *     --dir target/put-floor --port 8090
 * </pre>
 */
@Command(name = "put-floor", mixinStandardHelpOptions = true,
    description = "Takes PUTs over HTTP/1.1 or HTTP/2 and writes their bodies to files: the floor of a PUT.")
public final class PutFloorServer implements Callable<Integer> {

  private static final byte[] CREATED =
      "HTTP/1.1 201 Created\r\ncontent-length: 0\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
  private static final int HEADER_BYTES = 16 << 10;

  @Option(names = "--dir", required = true, description = "where the files go")
  Path dir;

  @Option(names = "--port", defaultValue = "0", description = "port on 127.0.0.1 (0: any free)")
  int port;

  @Option(names = "--file-bytes", defaultValue = "268435456",
      description = "bytes per file (default: 256 MiB, the disk tier's super-block)")
  long fileBytes;

  @Option(names = "--capacity", defaultValue = "8589934592",
      description = "bytes of files kept (default: 8 GiB, the server's disk tier)")
  long capacityBytes;

  @Option(names = "--max-block-bytes", defaultValue = "67108864",
      description = "the largest body (default: 64 MiB)")
  int maxBlockBytes;

  @Option(names = "--sync", defaultValue = "periodic",
      description = "none, periodic (every second) or always (before each answer)")
  String sync;

  @Option(names = "--direct", description = "write with O_DIRECT")
  boolean direct;

  private RotatingFiles files;

  public static void main(String[] args) {
    System.exit(new CommandLine(new PutFloorServer()).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    if (!List.of("none", "periodic", "always").contains(sync)) {
      throw new CommandLine.ParameterException(new CommandLine(this),
          "--sync is none, periodic or always, got '" + sync + "'");
    }
    files = new RotatingFiles(dir, fileBytes, capacityBytes, direct);
    int align = files.alignment();
    try (ServerSocketChannel server = ServerSocketChannel.open()) {
      server.bind(new InetSocketAddress("127.0.0.1", port));
      System.out.println("listening on " + server.getLocalAddress());
      System.out.flush();
      if (sync.equals("periodic")) {
        Thread syncer = new Thread(this::syncEverySecond, "put-floor-sync");
        syncer.setDaemon(true);
        syncer.start();
      }
      while (true) {
        SocketChannel socket = server.accept();
        Thread t = new Thread(() -> serve(socket, align), "put-floor-connection");
        t.setDaemon(true);
        t.start();
      }
    }
  }

  private void syncEverySecond() {
    while (true) {
      try {
        TimeUnit.SECONDS.sleep(1);
        files.force();
      } catch (InterruptedException e) {
        return;
      } catch (IOException e) {
        System.err.println("sync failed: " + e);
      }
    }
  }

  /** Serves one connection's requests in turn until the client closes it. */
  private void serve(SocketChannel socket, int align) {
    ByteBuffer head = ByteBuffer.allocateDirect(HEADER_BYTES);
    try (socket) {
      while (head.position() < PutFloorH2.PREFACE.length && socket.read(head) >= 0) {
        if (head.get(0) != 'P' || head.position() > 2 && head.get(2) != 'I') {
          break; // not "PRI * HTTP/2.0...": HTTP/1.1
        }
      }
      if (head.position() >= 3 && head.get(0) == 'P' && head.get(2) == 'I') {
        new PutFloorH2(socket, head.flip(), files, sync.equals("always"), maxBlockBytes, align)
            .serve();
        return;
      }
      ByteBuffer body = ByteBuffer.allocateDirect(maxBlockBytes + 2 * align).alignedSlice(align);
      ByteBuffer created = ByteBuffer.wrap(CREATED);
      while (true) {
        int length = readHeaders(socket, head);
        if (length < 0) {
          return;
        }
        if (head.remaining() > length) {
          throw new IOException("a request sent before the answer to the last one");
        }
        body.clear().limit(length);
        body.put(head); // the body's first bytes, read with the headers
        while (body.hasRemaining()) {
          if (socket.read(body) < 0) {
            return;
          }
        }
        head.clear();
        FileChannel file = files.append(body.flip());
        if (sync.equals("always")) {
          file.force(false);
        }
        socket.write(created.clear());
      }
    } catch (IOException | RuntimeException e) {
      System.err.println("connection ended: " + e);
    }
  }

  /**
   * Reads a request's headers into {@code head}; leaves {@code head} holding whatever was read
   * past them (the start of the body), ready to be read.
   *
   * @return the body's length, or -1 when the client closed the connection
   */
  private static int readHeaders(SocketChannel socket, ByteBuffer head) throws IOException {
    int end;
    while ((end = headersEnd(head)) < 0) {
      if (!head.hasRemaining()) {
        throw new IOException("headers longer than " + HEADER_BYTES + " bytes");
      }
      if (socket.read(head) < 0) {
        return -1;
      }
    }
    byte[] text = new byte[end];
    head.get(0, text);
    int length = -1;
    for (String line : new String(text, StandardCharsets.US_ASCII).split("\r\n")) {
      if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
        length = Integer.parseInt(line.substring("content-length:".length()).trim());
      }
    }
    if (length < 0) {
      throw new IOException("a request without content-length");
    }
    head.flip().position(end);
    return length;
  }

  /** The offset just past the blank line ending the headers in {@code head}, or -1. */
  private static int headersEnd(ByteBuffer head) {
    for (int i = 3; i < head.position(); i++) {
      if (head.get(i) == '\n' && head.get(i - 1) == '\r' && head.get(i - 2) == '\n'
          && head.get(i - 3) == '\r') {
        return i + 1;
      }
    }
    return -1;
  }
}
