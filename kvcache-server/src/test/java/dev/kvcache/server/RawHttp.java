package dev.kvcache.server;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * HTTP/1.1 written by hand, for requests no well-behaved client sends: lying lengths, bodies cut
 * off, bodies that keep coming after the server has answered.
 */
final class RawHttp {

  private static final byte[] ZEROS = new byte[1 << 20];

  private RawHttp() {}

  /**
   * Sends {@code head} (request line and headers, without the blank line) and {@code bodyBytes}
   * zero bytes, stopping early if the server closes, and half-closes if {@code cutShort}; then
   * reads until the server closes or 10 s pass.
   *
   * @return everything the server sent
   */
  static String exchange(URL server, String head, long bodyBytes, boolean cutShort)
      throws IOException {
    return exchange(server, head, out -> {
      for (long left = bodyBytes; left > 0; left -= ZEROS.length) {
        out.write(ZEROS, 0, (int) Math.min(ZEROS.length, left));
      }
    }, cutShort);
  }

  /** As {@link #exchange}, with a chunked body of {@code chunks} chunks of 1 MiB of zeros. */
  static String exchangeChunked(URL server, String head, int chunks) throws IOException {
    return exchange(server, head + "\r\nTransfer-Encoding: chunked", out -> {
      for (int i = 0; i < chunks; i++) {
        out.write((Integer.toHexString(ZEROS.length) + "\r\n").getBytes(StandardCharsets.US_ASCII));
        out.write(ZEROS);
        out.write("\r\n".getBytes(StandardCharsets.US_ASCII));
      }
      out.write("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
    }, false);
  }

  /** As {@link #exchange}, with {@code body} sent as it is after the head. */
  static String exchange(URL server, String head, byte[] body, boolean cutShort)
      throws IOException {
    return exchange(server, head, out -> out.write(body), cutShort);
  }

  /**
   * One answer as it came over the wire: the statuses of the interim (1xx) answers before it; its
   * status, headers (names in lower case, in order) and body (de-chunked); and what the server sent
   * after it.
   */
  record Answer(List<Integer> informational, int status, List<String[]> headers, byte[] body,
      String after) {}

  /**
   * The first answer in what {@link #exchange} received, or null if nothing came.
   *
   * @param head whether it answers a HEAD, whose answer has no body whatever its headers say
   */
  static Answer parse(String received, boolean head) {
    List<Integer> informational = new ArrayList<>();
    int end;
    String[] lines;
    int status;
    while (true) {
      end = received.indexOf("\r\n\r\n");
      if (end < 0) {
        return null;
      }
      lines = received.substring(0, end).split("\r\n");
      status = Integer.parseInt(lines[0].split(" ")[1]);
      if (status >= 200) {
        break;
      }
      informational.add(status);
      received = received.substring(end + 4);
    }
    List<String[]> headers = new ArrayList<>();
    long length = -1;
    boolean chunked = false;
    for (String line : Arrays.asList(lines).subList(1, lines.length)) {
      int colon = line.indexOf(':');
      String name = line.substring(0, colon).trim().toLowerCase(Locale.ROOT);
      String value = line.substring(colon + 1).trim();
      headers.add(new String[] {name, value});
      if (name.equals("content-length")) {
        length = Long.parseLong(value);
      } else if (name.equals("transfer-encoding") && value.equalsIgnoreCase("chunked")) {
        chunked = true;
      }
    }
    String rest = received.substring(end + 4);
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    int at = 0;
    if (head) {
      // no body, whatever the headers say
    } else if (chunked) {
      while (true) {
        int lineEnd = rest.indexOf("\r\n", at);
        int size = Integer.parseInt(rest.substring(at, lineEnd).split(";")[0].trim(), 16);
        at = lineEnd + 2;
        if (size == 0) {
          at = rest.indexOf("\r\n\r\n", at - 2) + 4; // past any trailers
          break;
        }
        body.writeBytes(rest.substring(at, at + size).getBytes(StandardCharsets.ISO_8859_1));
        at += size + 2;
      }
    } else {
      at = length < 0 ? rest.length() : (int) Math.min(length, rest.length());
      body.writeBytes(rest.substring(0, at).getBytes(StandardCharsets.ISO_8859_1));
    }
    return new Answer(informational, status, headers, body.toByteArray(), rest.substring(at));
  }

  private interface Body {
    void writeTo(OutputStream out) throws IOException;
  }

  private static String exchange(URL server, String head, Body body, boolean cutShort)
      throws IOException {
    try (Socket socket = new Socket(server.getHost(), server.getPort())) {
      socket.setSoTimeout(10_000);
      OutputStream out = socket.getOutputStream();
      out.write((head + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      try {
        body.writeTo(out);
        out.flush();
        if (cutShort) {
          socket.shutdownOutput();
        }
      } catch (SocketException closedByServer) {
        // the server answered and closed while the body was still going out: read its answer
      }
      return readUntilClosed(socket.getInputStream());
    }
  }

  /**
   * An answer's status line and headers, up to the blank line.
   *
   * @throws IOException if the connection closes first
   */
  static String readHead(InputStream in) throws IOException {
    StringBuilder head = new StringBuilder();
    while (!head.toString().endsWith("\r\n\r\n")) {
      int c = in.read();
      if (c < 0) {
        throw new IOException("the connection closed in an answer's head: " + head);
      }
      head.append((char) c);
    }
    return head.toString();
  }

  private static String readUntilClosed(InputStream in) throws IOException {
    ByteArrayOutputStream received = new ByteArrayOutputStream();
    byte[] buffer = new byte[8192];
    try {
      for (int n; (n = in.read(buffer)) >= 0; ) {
        received.write(buffer, 0, n);
      }
    } catch (SocketException reset) {
      // a reset after the answer still leaves the answer
    }
    return received.toString(StandardCharsets.ISO_8859_1);
  }
}
