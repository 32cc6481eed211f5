package dev.kvcache.bench.remote;

import dev.kvcache.bench.RotatingFiles;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * The HTTP/2 side of {@link PutFloorServer}: one cleartext connection with prior knowledge, as the
 * Java client opens it, taken with as little as HTTP/2 allows. Each stream's request headers are
 * skipped unread (no HPACK decoding: any request is a PUT), its DATA frames are read from the
 * socket straight into an aligned buffer of its own, and at the end of the stream the body is
 * written to the files and the stream answered {@code 201}. It advertises the frame size and
 * window of kvcache-server's defaults (1 MiB each) and gives back each frame's bytes to both
 * windows as soon as it has read them. Padded DATA frames are refused.
 */
final class PutFloorH2 {

  static final byte[] PREFACE =
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

  private static final int FRAME_HEADER_BYTES = 9;
  private static final int MAX_FRAME_BYTES = 1 << 20;
  private static final int WINDOW_BYTES = 1 << 20;
  private static final int DATA = 0;
  private static final int HEADERS = 1;
  private static final int SETTINGS = 4;
  private static final int PING = 6;
  private static final int GOAWAY = 7;
  private static final int WINDOW_UPDATE = 8;
  private static final int END_STREAM = 1;
  private static final int ACK = 1;
  private static final int END_HEADERS = 4;
  private static final int PADDED = 8;
  /** {@code :status 201}: a literal field without indexing, the name from the static table. */
  private static final byte[] STATUS_201 = {0x08, 3, '2', '0', '1'};

  private final SocketChannel socket;
  private final RotatingFiles files;
  private final boolean syncEach;
  private final int maxBlockBytes;
  private final int align;
  private final ByteBuffer pending;
  private final ByteBuffer header = ByteBuffer.allocateDirect(FRAME_HEADER_BYTES);
  private final ByteBuffer skipped = ByteBuffer.allocateDirect(64 << 10);
  private final ByteBuffer out = ByteBuffer.allocateDirect(64 << 10);
  private final Map<Integer, ByteBuffer> bodies = new HashMap<>();
  private final ArrayDeque<ByteBuffer> free = new ArrayDeque<>();

  /**
   * @param pending the bytes already read from the socket, the preface first, ready to be read
   */
  PutFloorH2(SocketChannel socket, ByteBuffer pending, RotatingFiles files, boolean syncEach,
      int maxBlockBytes, int align) {
    this.socket = socket;
    this.pending = pending;
    this.files = files;
    this.syncEach = syncEach;
    this.maxBlockBytes = maxBlockBytes;
    this.align = align;
  }

  /** Serves the connection's streams until the client closes it or sends GOAWAY. */
  void serve() throws IOException {
    ByteBuffer preface = ByteBuffer.allocate(PREFACE.length);
    if (!readFully(preface) || !preface.flip().equals(ByteBuffer.wrap(PREFACE))) {
      throw new IOException("not the HTTP/2 connection preface");
    }
    out.clear();
    frame(SETTINGS, 0, 0, 18);
    out.putShort((short) 0x3).putInt(128); // SETTINGS_MAX_CONCURRENT_STREAMS
    out.putShort((short) 0x4).putInt(WINDOW_BYTES); // SETTINGS_INITIAL_WINDOW_SIZE
    out.putShort((short) 0x5).putInt(MAX_FRAME_BYTES); // SETTINGS_MAX_FRAME_SIZE
    frame(WINDOW_UPDATE, 0, 0, 4);
    out.putInt(WINDOW_BYTES - 65_535); // the connection's window, as wide as a stream's
    flush();
    while (readFully(header.clear())) {
      int length = (header.get(0) & 0xff) << 16 | (header.get(1) & 0xff) << 8 | header.get(2) & 0xff;
      int type = header.get(3);
      int flags = header.get(4);
      int stream = header.getInt(5) & 0x7fffffff;
      switch (type) {
        case DATA -> data(stream, flags, length);
        case HEADERS -> {
          skip(length);
          if (bodies.put(stream, take()) != null) {
            throw new IOException("HEADERS twice on stream " + stream);
          }
          if ((flags & END_STREAM) != 0) {
            out.clear();
            answer(stream, null);
          }
        }
        case SETTINGS -> {
          skip(length);
          if ((flags & ACK) == 0) {
            out.clear();
            frame(SETTINGS, ACK, 0, 0);
            flush();
          }
        }
        case PING -> {
          ByteBuffer opaque = ByteBuffer.allocate(8);
          readFully(opaque);
          out.clear();
          frame(PING, ACK, 0, 8);
          out.put(opaque.flip());
          flush();
        }
        case GOAWAY -> {
          return;
        }
        default -> skip(length); // WINDOW_UPDATE, PRIORITY, RST_STREAM, CONTINUATION
      }
    }
  }

  /** A DATA frame: its payload goes straight into its stream's body. */
  private void data(int stream, int flags, int length) throws IOException {
    ByteBuffer body = bodies.get(stream);
    if (body == null) {
      throw new IOException("DATA on stream " + stream + ", which has no headers");
    }
    if ((flags & PADDED) != 0) {
      throw new IOException("padded DATA frames are not taken");
    }
    if (length > body.remaining()) {
      throw new IOException("a body past " + maxBlockBytes + " bytes on stream " + stream);
    }
    int end = body.position() + length;
    if (!readFully(body.limit(end))) {
      throw new IOException("the connection ended inside a DATA frame");
    }
    body.limit(maxBlockBytes);
    out.clear();
    if (length > 0) {
      frame(WINDOW_UPDATE, 0, 0, 4);
      out.putInt(length);
      if ((flags & END_STREAM) == 0) {
        frame(WINDOW_UPDATE, 0, stream, 4);
        out.putInt(length);
      }
    }
    if ((flags & END_STREAM) != 0) {
      answer(stream, body);
    } else {
      flush();
    }
  }

  /**
   * Writes a finished stream's body (if any) to the files and answers {@code 201}, after whatever
   * frames {@link #out} holds.
   */
  private void answer(int stream, ByteBuffer body) throws IOException {
    bodies.remove(stream);
    if (body != null && body.position() > 0) {
      FileChannel file = files.append(body.flip());
      if (syncEach) {
        file.force(false);
      }
    }
    if (body != null) {
      free.push(body.clear().limit(maxBlockBytes));
    }
    frame(HEADERS, END_STREAM | END_HEADERS, stream, STATUS_201.length);
    out.put(STATUS_201);
    flush();
  }

  private ByteBuffer take() {
    ByteBuffer b = free.poll();
    return b != null ? b
        : ByteBuffer.allocateDirect(maxBlockBytes + 2 * align).alignedSlice(align)
            .limit(maxBlockBytes);
  }

  private void frame(int type, int flags, int stream, int length) {
    out.put((byte) (length >>> 16)).put((byte) (length >>> 8)).put((byte) length)
        .put((byte) type).put((byte) flags).putInt(stream);
  }

  private void flush() throws IOException {
    out.flip();
    while (out.hasRemaining()) {
      socket.write(out);
    }
    out.clear();
  }

  private void skip(int length) throws IOException {
    for (int left = length; left > 0; left -= skipped.limit()) {
      if (!readFully(skipped.clear().limit(Math.min(left, skipped.capacity())))) {
        throw new IOException("the connection ended inside a frame");
      }
    }
  }

  /** Fills {@code dst}, the bytes read before the preface was seen first; false at end of input. */
  private boolean readFully(ByteBuffer dst) throws IOException {
    while (dst.hasRemaining() && pending.hasRemaining()) {
      dst.put(pending.get());
    }
    while (dst.hasRemaining()) {
      if (socket.read(dst) < 0) {
        return false;
      }
    }
    return true;
  }
}
