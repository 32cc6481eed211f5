package dev.kvcache.bench;

import com.sun.nio.file.ExtendedOpenOption;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The plain-file baseline of the disk tier's writes: bytes appended with {@code FileChannel.write}
 * to a series of new files of {@code fileBytes} each, the oldest deleted once the files would
 * exceed {@code capacityBytes}, as the tier fills super-blocks and drops the oldest. Several threads
 * may append at once: each takes its place in order, then writes there. With {@code direct}, the
 * files are written with {@code O_DIRECT} from the callers' aligned buffers, each append padded to
 * the file system's block with the bytes that follow it in the buffer. A file stays open until it
 * is deleted, so an append that took its place before a roll-over finishes there.
 */
public final class RotatingFiles implements AutoCloseable {
  private final Path dir;
  private final long fileBytes;
  private final long capacityBytes;
  private final boolean direct;
  private final int alignment;
  /** The files, oldest first, with their channels; the last one is written. */
  private final ArrayDeque<Map.Entry<Path, FileChannel>> files = new ArrayDeque<>();
  /** Files appended to since the last {@link #force}. */
  private final Set<FileChannel> written = new LinkedHashSet<>();
  private FileChannel current;
  private long offset;
  private long created;

  /** Appends through the page cache. */
  public RotatingFiles(Path dir, long fileBytes, long capacityBytes) throws IOException {
    this(dir, fileBytes, capacityBytes, false);
  }

  public RotatingFiles(Path dir, long fileBytes, long capacityBytes, boolean direct)
      throws IOException {
    this.dir = Files.createDirectories(dir);
    this.fileBytes = fileBytes;
    this.capacityBytes = capacityBytes;
    this.direct = direct;
    this.alignment = direct ? (int) Files.getFileStore(this.dir).getBlockSize() : 1;
  }

  /** The alignment of a direct append's buffer: the file system's block (1 without direct). */
  public int alignment() {
    return alignment;
  }

  /** Appends {@code src}'s remaining bytes (without moving its position). */
  public int write(ByteBuffer src) throws IOException {
    int n = src.remaining();
    append(src.duplicate());
    return n;
  }

  /**
   * Appends {@code src}'s remaining bytes, advancing it; with {@code direct}, padded to the
   * alignment with the bytes after them in {@code src}'s buffer, which must have that room.
   *
   * @return the file they went to
   */
  public FileChannel append(ByteBuffer src) throws IOException {
    int padded = (src.remaining() + alignment - 1) / alignment * alignment;
    FileChannel file;
    long at;
    synchronized (this) {
      if (current == null || offset + padded > fileBytes) {
        next();
      }
      file = current;
      at = offset;
      offset += padded;
      written.add(file);
    }
    src.limit(src.position() + padded);
    while (src.hasRemaining()) {
      at += file.write(src, at);
    }
    return file;
  }

  /** Forces every file appended to since the last force, as the tier's periodic sync does. */
  public void force() throws IOException {
    List<FileChannel> toForce;
    synchronized (this) {
      toForce = new ArrayList<>(written);
      written.clear();
    }
    for (FileChannel f : toForce) {
      if (f.isOpen()) {
        f.force(false);
      }
    }
  }

  private void next() throws IOException {
    while ((files.size() + 1) * fileBytes > capacityBytes && !files.isEmpty()) {
      Map.Entry<Path, FileChannel> oldest = files.removeFirst();
      written.remove(oldest.getValue());
      oldest.getValue().close();
      Files.delete(oldest.getKey());
    }
    Path file = dir.resolve("file-" + created++);
    List<OpenOption> options =
        new ArrayList<>(List.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE));
    if (direct) {
      options.add(ExtendedOpenOption.DIRECT);
    }
    current = FileChannel.open(file, options.toArray(OpenOption[]::new));
    files.addLast(Map.entry(file, current));
    offset = 0;
  }

  @Override
  public synchronized void close() throws IOException {
    for (Map.Entry<Path, FileChannel> f : files) {
      f.getValue().close();
    }
  }
}
