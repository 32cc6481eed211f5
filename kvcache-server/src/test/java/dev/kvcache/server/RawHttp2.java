package dev.kvcache.server;

import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.DefaultHttp2HeadersDecoder;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2Headers;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * An HTTP/2 cleartext connection spoken frame by frame over a plain socket, for clients that
 * misbehave on purpose. Headers are sent as HPACK literals, which every decoder takes.
 */
final class RawHttp2 implements AutoCloseable {

  static final int DATA = 0;
  static final int HEADERS = 1;
  static final int RST_STREAM = 3;
  static final int SETTINGS = 4;
  static final int GOAWAY = 7;
  static final int WINDOW_UPDATE = 8;
  static final int END_STREAM = 0x1;
  static final int END_HEADERS = 0x4;
  static final int REFUSED_STREAM = 0x7;
  static final int CANCEL = 0x8;
  static final int ENHANCE_YOUR_CALM = 0xb;

  /** A frame read from the server; the payload is kept only for short frames. */
  record Frame(int type, int flags, int stream, byte[] payload) {
    /** The error code of a RST_STREAM or GOAWAY frame. */
    int errorCode() {
      int at = type == GOAWAY ? 4 : 0;
      return ((payload[at] & 0xff) << 24) | ((payload[at + 1] & 0xff) << 16)
          | ((payload[at + 2] & 0xff) << 8) | (payload[at + 3] & 0xff);
    }

    /** The increment of a WINDOW_UPDATE frame. */
    int windowIncrement() {
      return errorCode() & 0x7fffffff;
    }
  }

  private final Socket socket;
  private final OutputStream out;
  private final DataInputStream in;
  private final String authority;
  private final DefaultHttp2HeadersDecoder decoder = new DefaultHttp2HeadersDecoder(false);
  /** Bytes the server lets this client send, on the connection and on a new stream. */
  private int connectionSendWindow = 65_535;
  private int initialStreamSendWindow = 65_535;

  RawHttp2(String host, int port) throws IOException {
    this(host, port, true);
  }

  /**
   * A connection whose preface goes out at once, or ({@code sendPreface} false) with the first
   * {@link #flush}, in one write with the first requests, so that the server reads them together.
   */
  RawHttp2(String host, int port, boolean sendPreface) throws IOException {
    socket = new Socket(host, port);
    socket.setSoTimeout(10_000);
    out = new BufferedOutputStream(socket.getOutputStream(), 1 << 16);
    in = new DataInputStream(socket.getInputStream());
    authority = host + ":" + port;
    out.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
    frame(SETTINGS, 0, 0, new byte[0]);
    if (sendPreface) {
      out.flush();
    }
  }

  /** Opens stream {@code stream} (odd, increasing) with a request; no body follows if {@code last}. */
  void request(int stream, String method, String path, boolean last) throws IOException {
    request(stream, method, path, last, new String[0]);
  }

  /** As {@link #request(int, String, String, boolean)}, with more headers: name, value, ... */
  void request(int stream, String method, String path, boolean last, String... headers)
      throws IOException {
    byte[] block = concat(literal(":method", method), literal(":scheme", "http"),
        literal(":path", path), literal(":authority", authority),
        literal("content-type", "application/octet-stream"));
    for (int i = 0; i < headers.length; i += 2) {
      block = concat(block, literal(headers[i], headers[i + 1]));
    }
    frame(HEADERS, END_HEADERS | (last ? END_STREAM : 0), stream, block);
  }

  /**
   * The headers of a HEADERS frame from the server. Every HEADERS frame the server sent must go
   * through here, in order: HPACK's table spans the connection.
   */
  Http2Headers headers(Frame f) throws Http2Exception {
    return decoder.decodeHeaders(f.stream(), Unpooled.wrappedBuffer(f.payload()));
  }

  /** The next HEADERS frame on {@code stream}, decoded (others are skipped, their headers decoded). */
  Http2Headers nextHeaders(int stream) throws IOException, Http2Exception {
    for (Frame f; (f = next()) != null; ) {
      if (f.type() == HEADERS) {
        Http2Headers h = headers(f);
        if (f.stream() == stream) {
          return h;
        }
      }
    }
    return null;
  }

  /** The next RST_STREAM frame on {@code stream} (others are skipped, their headers decoded). */
  Frame nextReset(int stream) throws IOException, Http2Exception {
    for (Frame f; (f = next()) != null; ) {
      if (f.type() == HEADERS) {
        headers(f);
      } else if (f.type() == RST_STREAM && f.stream() == stream) {
        return f;
      }
    }
    return null;
  }

  /**
   * An answer read by {@link #exchange}: the statuses of any interim (1xx) answers before it, its
   * headers (null if none came) and its body, and the RST_STREAM or GOAWAY frame that ended the
   * stream instead, if one did.
   */
  record Answer(List<String> informational, Http2Headers headers, byte[] body, Frame ended) {}

  /**
   * Sends a request as a well-behaved client would and reads its answer: the body goes out in DATA
   * frames of 16 KiB within the windows the server gives, and every DATA frame read gives its
   * window back. Only the pseudo-headers are added to {@code headers} (name, value, ...; names in
   * lower case). Sending stops once the stream is answered or reset; a stream still open then (a
   * body not all sent, or {@code end} false) is reset with {@code CANCEL}.
   *
   * @param body the request's body, or null for none
   * @param end whether the request ends after the body (END_STREAM); if not, the stream stays
   *     open until the server answers or resets it
   */
  Answer exchange(int stream, String method, String path, byte[] body, boolean end,
      String... headers) throws IOException, Http2Exception {
    byte[] block = concat(literal(":method", method), literal(":scheme", "http"),
        literal(":path", path), literal(":authority", authority));
    for (int i = 0; i < headers.length; i += 2) {
      block = concat(block, literal(headers[i], headers[i + 1]));
    }
    boolean noData = body == null || body.length == 0;
    frame(HEADERS, END_HEADERS | (noData && end ? END_STREAM : 0), stream, block);
    Reading reading = new Reading(stream);
    int sent = 0;
    while (!noData && sent < body.length && !reading.done()) {
      int n = Math.min(16_384, body.length - sent);
      if (n > connectionSendWindow || n > reading.sendWindow) {
        out.flush();
        Frame f = next();
        if (f == null) {
          break;
        }
        reading.read(f);
        continue;
      }
      boolean last = sent + n == body.length;
      frame(DATA, last && end ? END_STREAM : 0, stream, Arrays.copyOfRange(body, sent, sent + n));
      connectionSendWindow -= n;
      reading.sendWindow -= n;
      sent += n;
    }
    out.flush();
    for (Frame f; !reading.done() && (f = next()) != null; ) {
      reading.read(f);
    }
    if (reading.ended == null && (!end || (!noData && sent < body.length))) {
      reset(stream);
      out.flush();
    }
    return new Answer(reading.informational, reading.headers, reading.body.toByteArray(),
        reading.ended);
  }

  /** What has come of one exchange's stream so far. */
  private final class Reading {
    final int stream;
    int sendWindow = initialStreamSendWindow;
    final List<String> informational = new ArrayList<>();
    Http2Headers headers;
    final ByteArrayOutputStream body = new ByteArrayOutputStream();
    boolean answered;
    Frame ended;

    Reading(int stream) {
      this.stream = stream;
    }

    boolean done() {
      return answered || ended != null;
    }

    void read(Frame f) throws IOException, Http2Exception {
      boolean endsStream = (f.flags() & END_STREAM) != 0;
      switch (f.type()) {
        case HEADERS -> {
          if ((f.flags() & END_HEADERS) == 0) {
            throw new IOException("headers continued in CONTINUATION frames: not read here");
          }
          Http2Headers h = headers(f);
          if (f.stream() == stream) {
            if (headers == null && h.status() != null && h.status().charAt(0) == '1') {
              informational.add(h.status().toString());
            } else if (headers == null) {
              headers = h;
            }
            answered |= endsStream;
          }
        }
        case DATA -> {
          if (f.stream() == stream) {
            body.write(f.payload());
            answered |= endsStream;
          }
          if (f.payload().length > 0) {
            window(0, f.payload().length);
            if (!endsStream) {
              window(f.stream(), f.payload().length);
            }
            out.flush();
          }
        }
        case RST_STREAM -> {
          if (f.stream() == stream) {
            ended = f;
          }
        }
        case GOAWAY -> ended = f;
        case SETTINGS -> {
          for (int at = 0; (f.flags() & 0x1) == 0 && at + 6 <= f.payload().length; at += 6) {
            int id = ((f.payload()[at] & 0xff) << 8) | (f.payload()[at + 1] & 0xff);
            if (id == 4) {
              byte[] p = f.payload();
              int value = ((p[at + 2] & 0xff) << 24) | ((p[at + 3] & 0xff) << 16)
                  | ((p[at + 4] & 0xff) << 8) | (p[at + 5] & 0xff);
              sendWindow += value - initialStreamSendWindow;
              initialStreamSendWindow = value;
            }
          }
        }
        case WINDOW_UPDATE -> {
          if (f.stream() == 0) {
            connectionSendWindow += f.windowIncrement();
          } else if (f.stream() == stream) {
            sendWindow += f.windowIncrement();
          }
        }
        default -> {
          // PING is answered by nobody here; nothing else matters to one exchange
        }
      }
    }
  }

  void data(int stream, byte[] bytes, boolean last) throws IOException {
    frame(DATA, last ? END_STREAM : 0, stream, bytes);
  }

  /**
   * Lets the server send {@code streamWindow} bytes on each stream and {@code connectionWindow} on
   * the connection (up from HTTP/2's 64 KiB) before it waits for a window update.
   */
  void openWindows(int streamWindow, int connectionWindow) throws IOException {
    frame(SETTINGS, 0, 0, new byte[] {0, 4, (byte) (streamWindow >>> 24),
        (byte) (streamWindow >>> 16), (byte) (streamWindow >>> 8), (byte) streamWindow});
    int increment = connectionWindow - 65_535;
    frame(WINDOW_UPDATE, 0, 0, new byte[] {(byte) (increment >>> 24), (byte) (increment >>> 16),
        (byte) (increment >>> 8), (byte) increment});
  }

  /** Lets the server send {@code increment} more bytes on {@code stream}. */
  void window(int stream, int increment) throws IOException {
    frame(WINDOW_UPDATE, 0, stream, new byte[] {(byte) (increment >>> 24),
        (byte) (increment >>> 16), (byte) (increment >>> 8), (byte) increment});
  }

  void reset(int stream) throws IOException {
    frame(RST_STREAM, 0, stream, new byte[] {0, 0, 0, CANCEL});
  }

  void flush() throws IOException {
    out.flush();
  }

  /**
   * The next frame from the server, acknowledging its SETTINGS on the way; null once the server
   * closed the connection or sent nothing for the socket's timeout.
   */
  Frame next() throws IOException {
    byte[] header = new byte[9];
    try {
      in.readFully(header);
    } catch (EOFException | SocketTimeoutException e) {
      return null;
    } catch (IOException e) {
      return null; // reset by the server
    }
    int length = ((header[0] & 0xff) << 16) | ((header[1] & 0xff) << 8) | (header[2] & 0xff);
    int type = header[3];
    int flags = header[4] & 0xff;
    int stream = ((header[5] & 0x7f) << 24) | ((header[6] & 0xff) << 16)
        | ((header[7] & 0xff) << 8) | (header[8] & 0xff);
    byte[] payload = new byte[length];
    in.readFully(payload);
    if (type == SETTINGS && (flags & 0x1) == 0) {
      frame(SETTINGS, 0x1, 0, new byte[0]);
      out.flush();
    }
    return new Frame(type, flags, stream, payload);
  }

  private void frame(int type, int flags, int stream, byte[] payload) throws IOException {
    out.write(new byte[] {(byte) (payload.length >>> 16), (byte) (payload.length >>> 8),
        (byte) payload.length, (byte) type, (byte) flags, (byte) (stream >>> 24),
        (byte) (stream >>> 16), (byte) (stream >>> 8), (byte) stream});
    out.write(payload);
  }

  /** A header field as an HPACK literal without indexing, with a new name. */
  private static byte[] literal(String name, String value) {
    ByteArrayOutputStream field = new ByteArrayOutputStream();
    field.write(0);
    hpackString(field, name.getBytes(StandardCharsets.US_ASCII));
    hpackString(field, value.getBytes(StandardCharsets.US_ASCII));
    return field.toByteArray();
  }

  /** An HPACK string literal, not Huffman-coded: its length as a 7-bit prefix integer, then it. */
  private static void hpackString(ByteArrayOutputStream out, byte[] s) {
    if (s.length < 127) {
      out.write(s.length);
    } else {
      out.write(127);
      int rest = s.length - 127;
      for (; rest >= 128; rest >>>= 7) {
        out.write((rest & 0x7f) | 0x80);
      }
      out.write(rest);
    }
    out.write(s, 0, s.length);
  }

  private static byte[] concat(byte[]... parts) {
    int length = 0;
    for (byte[] p : parts) {
      length += p.length;
    }
    byte[] all = new byte[length];
    int at = 0;
    for (byte[] p : parts) {
      System.arraycopy(p, 0, all, at, p.length);
      at += p.length;
    }
    return all;
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
