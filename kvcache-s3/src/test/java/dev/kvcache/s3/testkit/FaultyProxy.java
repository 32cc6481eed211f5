package dev.kvcache.s3.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A TCP proxy on loopback in front of a real S3 server that injects the faults an object store
 * shows in production: it passes requests on, answers every request {@code 503 SlowDown} (or
 * {@code 500}), holds connections without answering (a store that hangs), resets them as they
 * open (a store that is down), cuts answers off after
 * some bytes (a store that dies mid-transfer), or answers the requests a {@linkplain #rule rule}
 * picks in the store's place (a store that throttles some requests, refuses some deletes).
 */
public final class FaultyProxy implements AutoCloseable {

  /** What the proxy does with the next connections. */
  public enum Mode {
    PASS,
    SLOW_DOWN,
    INTERNAL_ERROR,
    HANG,
    /** Every connection is closed as it opens, before a byte is read: a store that is down. */
    DOWN,
    CUT_ANSWERS,
    /** Each request is read whole and passed to the rule: its answer, or the store's. */
    RULED
  }

  /** A request as the proxy read it: method, target (path and query), headers, body. */
  public record Request(String method, String target, String head, byte[] body) {
    /** Whether the request is a bulk delete ({@code POST ?delete}). */
    public boolean bulkDelete() {
      return method.equals("POST") && (target.endsWith("?delete") || target.contains("?delete&")
          || target.contains("&delete"));
    }
  }

  /** An answer the proxy gives in the store's place. */
  public record Answer(String status, String contentType, byte[] body) {
    /** An S3 error answer: {@code status} such as {@code "503 Slow Down"}, and its code. */
    public static Answer error(String status, String code) {
      return new Answer(status, "application/xml", ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
          + "<Error><Code>" + code + "</Code><Message>injected</Message></Error>")
          .getBytes(StandardCharsets.UTF_8));
    }

    /**
     * The answer to a bulk delete that refuses every object it names with {@code code}, as a
     * store answers for objects under a lock or a policy that denies their deletion.
     */
    public static Answer refuseEachDeleted(Request bulkDelete, String code) {
      StringBuilder xml = new StringBuilder("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
          + "<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
      Matcher m = Pattern.compile("<Key>(.*?)</Key>")
          .matcher(new String(bulkDelete.body(), StandardCharsets.UTF_8));
      while (m.find()) {
        xml.append("<Error><Key>").append(m.group(1)).append("</Key><Code>").append(code)
            .append("</Code><Message>injected</Message></Error>");
      }
      return new Answer("200 OK", "application/xml",
          xml.append("</DeleteResult>").toString().getBytes(StandardCharsets.UTF_8));
    }
  }

  private static final int CUT_AFTER_BYTES = 64 << 10;

  private final URI target;
  private final ServerSocket server;
  private final List<Socket> open = new CopyOnWriteArrayList<>();
  private volatile Mode mode = Mode.PASS;
  private volatile Function<Request, Answer> rule = r -> null;
  private final LongAdder answered = new LongAdder();
  private final AtomicBoolean dropNext = new AtomicBoolean();
  private volatile boolean closed;

  public FaultyProxy(URI target) throws IOException {
    this.target = target;
    this.server = new ServerSocket(0, 64, InetAddress.getLoopbackAddress());
    Thread accept = new Thread(this::accept, "faulty-proxy");
    accept.setDaemon(true);
    accept.start();
  }

  public URI endpoint() {
    return URI.create("http://127.0.0.1:" + server.getLocalPort());
  }

  /**
   * Closes the connection that carries the next request as the request arrives, without an
   * answer, as a store closes a pooled connection just as the client reuses it; the connections
   * stay as they are until then.
   */
  public void dropNextRequest() {
    dropNext.set(true);
  }

  /**
   * From now on, reads each request whole and answers it with what {@code rule} returns, or
   * passes it to the store if it returns null ({@link Mode#RULED}); connections already open are
   * closed. The rule runs on the proxy's threads.
   */
  public void rule(Function<Request, Answer> rule) {
    this.rule = rule;
    mode(Mode.RULED);
  }

  /** How many requests a rule has answered in the store's place. */
  public long answeredByRule() {
    return answered.sum();
  }

  /** Sets what happens from now on; connections already open are closed. */
  public void mode(Mode mode) {
    this.mode = mode;
    for (Socket s : open) {
      closeQuietly(s);
    }
    open.clear();
  }

  private void accept() {
    while (!closed) {
      try {
        Socket client = server.accept();
        open.add(client);
        Thread t = new Thread(() -> serve(client), "faulty-proxy-conn");
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        return;
      }
    }
  }

  private void serve(Socket client) {
    Mode now = mode;
    try {
      switch (now) {
        case SLOW_DOWN, INTERNAL_ERROR -> refuse(client, now);
        case HANG -> client.getInputStream().transferTo(OutputStream.nullOutputStream());
        case DOWN -> client.setSoLinger(true, 0); // closed below with a reset
        case PASS, CUT_ANSWERS -> forward(client, now == Mode.CUT_ANSWERS);
        case RULED -> ruled(client);
      }
    } catch (IOException e) {
      // the connection ended
    } finally {
      closeQuietly(client);
      open.remove(client);
    }
  }

  /** Answers each request on the connection with an S3 error, after reading its head and body. */
  private static void refuse(Socket client, Mode mode) throws IOException {
    InputStream in = client.getInputStream();
    OutputStream out = client.getOutputStream();
    while (true) {
      long bodyLength = readHead(in);
      if (bodyLength < 0) {
        return;
      }
      in.skipNBytes(bodyLength);
      String code = mode == Mode.SLOW_DOWN ? "SlowDown" : "InternalError";
      String status = mode == Mode.SLOW_DOWN ? "503 Slow Down" : "500 Internal Server Error";
      byte[] body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>" + code
          + "</Code><Message>injected</Message></Error>").getBytes(StandardCharsets.UTF_8);
      out.write(("HTTP/1.1 " + status + "\r\nContent-Type: application/xml\r\nContent-Length: "
          + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      out.write(body);
      out.flush();
    }
  }

  /**
   * Serves the connection's requests one at a time: each is read whole (after a {@code 100
   * Continue} if the client waits for one) and answered by the rule, or sent to the store on a
   * connection of its own that the store closes after its answer, which is passed back as it
   * comes; the client's connection then closes too.
   */
  private void ruled(Socket client) throws IOException {
    InputStream in = client.getInputStream();
    OutputStream out = client.getOutputStream();
    while (true) {
      String head = readHeadText(in);
      if (head == null) {
        return;
      }
      String[] requestLine = head.substring(0, head.indexOf("\r\n")).split(" ");
      long length = header(head, "content-length").map(Long::parseLong).orElse(0L);
      StringBuilder upstreamHead = new StringBuilder();
      for (String line : head.split("\r\n")) {
        String name = line.contains(":") ? line.substring(0, line.indexOf(':')).trim() : "";
        if (name.equalsIgnoreCase("expect") || name.equalsIgnoreCase("connection")) {
          continue;
        }
        upstreamHead.append(line).append("\r\n");
      }
      if (header(head, "expect").filter(v -> v.equalsIgnoreCase("100-continue")).isPresent()) {
        out.write("HTTP/1.1 100 Continue\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        out.flush();
      }
      byte[] body = in.readNBytes((int) length);
      Answer answer = rule.apply(new Request(requestLine[0], requestLine[1], head, body));
      if (answer != null) {
        answered.increment();
        out.write(("HTTP/1.1 " + answer.status() + "\r\nContent-Type: " + answer.contentType()
            + "\r\nContent-Length: " + answer.body().length + "\r\n\r\n")
            .getBytes(StandardCharsets.US_ASCII));
        out.write(answer.body());
        out.flush();
        continue;
      }
      try (Socket upstream = new Socket(target.getHost(), target.getPort())) {
        open.add(upstream);
        OutputStream to = upstream.getOutputStream();
        to.write((upstreamHead + "Connection: close\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
        to.write(body);
        to.flush();
        upstream.getInputStream().transferTo(out); // the store closes after its answer
        out.flush();
        open.remove(upstream);
      }
      return; // the answer said Connection: close
    }
  }

  private static Optional<String> header(String head, String name) {
    for (String line : head.split("\r\n")) {
      int colon = line.indexOf(':');
      if (colon > 0 && line.substring(0, colon).trim().equalsIgnoreCase(name)) {
        return Optional.of(line.substring(colon + 1).trim());
      }
    }
    return Optional.empty();
  }

  /** Reads a request head up to its blank line; null at the end of the connection. */
  private static String readHeadText(InputStream in) throws IOException {
    StringBuilder head = new StringBuilder();
    int c;
    while ((c = in.read()) >= 0) {
      head.append((char) c);
      if (head.length() >= 4 && head.substring(head.length() - 4).equals("\r\n\r\n")) {
        return head.toString();
      }
    }
    return null;
  }

  /** Reads a request head; returns its content-length (0 if none), or -1 at the end. */
  private static long readHead(InputStream in) throws IOException {
    StringBuilder head = new StringBuilder();
    int c;
    while ((c = in.read()) >= 0) {
      head.append((char) c);
      if (head.length() >= 4 && head.substring(head.length() - 4).equals("\r\n\r\n")) {
        long length = 0;
        for (String line : head.toString().split("\r\n")) {
          int colon = line.indexOf(':');
          if (colon > 0 && line.substring(0, colon).trim().equalsIgnoreCase("content-length")) {
            length = Long.parseLong(line.substring(colon + 1).trim());
          }
        }
        return length;
      }
    }
    return -1;
  }

  private void forward(Socket client, boolean cut) throws IOException {
    try (Socket upstream = new Socket(target.getHost(), target.getPort())) {
      open.add(upstream);
      Thread up = new Thread(() -> {
        try {
          InputStream from = client.getInputStream();
          OutputStream to = upstream.getOutputStream();
          byte[] request = new byte[16 << 10];
          for (int n; (n = from.read(request)) > 0; ) {
            if (dropNext.compareAndSet(true, false)) {
              closeQuietly(client); // the request is never passed on nor answered
              return;
            }
            to.write(request, 0, n);
          }
        } catch (IOException e) {
          // either side closed
        } finally {
          closeQuietly(upstream);
        }
      }, "faulty-proxy-up");
      up.setDaemon(true);
      up.start();
      InputStream in = upstream.getInputStream();
      OutputStream out = client.getOutputStream();
      byte[] buffer = new byte[16 << 10];
      long sent = 0;
      int n;
      while ((n = in.read(buffer)) > 0) {
        if (cut && sent + n > CUT_AFTER_BYTES) {
          out.write(buffer, 0, (int) (CUT_AFTER_BYTES - sent));
          out.flush();
          return; // the store dies mid-answer
        }
        out.write(buffer, 0, n);
        sent += n;
      }
    } finally {
      closeQuietly(client);
    }
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      // already closed
    }
  }

  @Override
  public void close() {
    closed = true;
    try {
      server.close();
    } catch (IOException e) {
      // already closed
    }
    mode(Mode.PASS);
  }
}
