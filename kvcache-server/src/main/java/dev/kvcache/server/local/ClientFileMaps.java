package dev.kvcache.server.local;

import dev.kvcache.internal.memory.Unmapper;
import io.micronaut.scheduling.annotation.Scheduled;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Singleton;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * The server's mappings of clients' files that {@link LeaseCopies} writes into, kept from one copy
 * to the next: a file mapped anew takes a page fault on each page the server first writes. An
 * engine's file that is deleted keeps its memory while the server maps it, so every {@code 10 s}
 * a sweep unmaps each mapping whose path no longer names the file mapped (the engine ended, or
 * made a new file), or that went unused for {@link #IDLE_NANOS}; all are unmapped when the server
 * stops.
 *
 * <p>A mapping is found by the path the client named and the identity (device and inode) of the
 * file the caller opened through it ({@link OpenedFile}): a mapping of another file is never
 * handed out for the file opened.
 */
@Singleton
public class ClientFileMaps {

  /** Bytes per mapped segment (a mapping in Java is at most 2 GiB). */
  static final long SEGMENT_BYTES = 1L << 30;
  /** How long an unused mapping is kept. */
  static final long IDLE_NANOS = 600_000_000_000L;

  /** One client file, mapped whole in segments. */
  static final class Mapped {
    private final String path;
    private final Object identity;
    private final long size;
    private final MappedByteBuffer[] segments;
    private int users;
    private long lastUsed;
    private boolean retired;

    private Mapped(String path, Object identity, long size, MappedByteBuffer[] segments) {
      this.path = path;
      this.identity = identity;
      this.size = size;
      this.segments = segments;
    }

    /** The file's size when it was mapped. */
    long size() {
      return size;
    }

    /**
     * The {@code length} bytes at {@code offset}, a view of the mapping; {@code length} must not
     * cross a segment ({@link #piece}).
     */
    ByteBuffer slice(long offset, int length) {
      int segment = (int) (offset / SEGMENT_BYTES);
      return segments[segment].slice((int) (offset % SEGMENT_BYTES), length);
    }

    /**
     * Whether the 16 bytes at {@code offset} are {@code high} then {@code low}, each big-endian:
     * read in place, with no view made.
     */
    boolean holds(long offset, long high, long low) {
      int segment = (int) (offset / SEGMENT_BYTES);
      int at = (int) (offset % SEGMENT_BYTES);
      if (at + 16 <= segments[segment].capacity()) {
        return segments[segment].getLong(at) == high && segments[segment].getLong(at + 8) == low;
      }
      ByteBuffer across = ByteBuffer.allocate(16); // the 16 bytes cross into the next segment
      for (int got = 0; got < 16; ) {
        int n = piece(offset + got, 16 - got);
        across.put(got, slice(offset + got, n), 0, n);
        got += n;
      }
      return across.getLong(0) == high && across.getLong(8) == low;
    }

    /** How many of the {@code length} bytes at {@code offset} lie in its segment. */
    static int piece(long offset, int length) {
      return (int) Math.min(length, SEGMENT_BYTES - offset % SEGMENT_BYTES);
    }
  }

  private final Map<String, Mapped> byPath = new HashMap<>();
  private boolean closed;

  /**
   * The mapping of {@code path}, the file of {@code identity} ({@code BasicFileAttributes.fileKey})
   * open as {@code ch}, mapped now if it was not; {@link #release} it.
   */
  synchronized Mapped acquire(String path, Object identity, FileChannel ch) throws IOException {
    Mapped m = byPath.get(path);
    if (m == null || identity == null || !identity.equals(m.identity) || m.size != ch.size()) {
      m = replace(path, identity, ch);
    }
    m.users++;
    return m;
  }

  synchronized void release(Mapped m) {
    m.users--;
    m.lastUsed = System.nanoTime();
    if (m.retired && m.users == 0) {
      unmap(m);
    }
  }

  private Mapped replace(String path, Object identity, FileChannel ch) throws IOException {
    if (closed) {
      throw new IOException("the server is stopping");
    }
    long size = ch.size();
    List<MappedByteBuffer> segments = new ArrayList<>();
    for (long at = 0; at < size; at += SEGMENT_BYTES) {
      segments.add(ch.map(FileChannel.MapMode.READ_WRITE, at, Math.min(SEGMENT_BYTES, size - at)));
    }
    Mapped fresh = new Mapped(path, identity, size, segments.toArray(new MappedByteBuffer[0]));
    retire(byPath.put(path, fresh));
    return fresh;
  }

  /**
   * Retires the unused mappings whose path names another file now, or none, or that went unused
   * for {@link #IDLE_NANOS}.
   */
  @Scheduled(fixedDelay = "10s")
  public synchronized void sweep() {
    long now = System.nanoTime();
    for (Iterator<Mapped> it = byPath.values().iterator(); it.hasNext(); ) {
      Mapped m = it.next();
      if (m.users == 0 && (now - m.lastUsed > IDLE_NANOS
          || m.identity == null || !m.identity.equals(identity(m.path)))) {
        it.remove();
        retire(m);
      }
    }
  }

  /** The identity of the file {@code path} names now, or null if none. */
  private static Object identity(String path) {
    try {
      return Files.readAttributes(Path.of(path), BasicFileAttributes.class).fileKey();
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  private void retire(Mapped m) {
    if (m == null || m.retired) {
      return;
    }
    m.retired = true;
    if (m.users == 0) {
      unmap(m);
    }
  }

  private static void unmap(Mapped m) {
    for (MappedByteBuffer segment : m.segments) {
      Unmapper.unmap(segment);
    }
  }

  /** How many files are mapped now. */
  public synchronized int mapped() {
    return byPath.size();
  }

  @PreDestroy
  synchronized void close() {
    closed = true;
    byPath.values().forEach(this::retire);
    byPath.clear();
  }
}
