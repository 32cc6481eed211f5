package dev.kvcache.bench;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.Map;

/**
 * The plain-file baseline of the disk tier's writes: bytes appended with {@code FileChannel.write}
 * to a series of new files of {@code fileBytes} each, the oldest deleted once the files would
 * exceed {@code capacityBytes}, as the tier fills super-blocks and drops the oldest.
 */
final class RotatingFiles implements AutoCloseable {
  private final Path dir;
  private final long fileBytes;
  private final long capacityBytes;
  /** The files, oldest first; each with its channel until it is forced (the last one: open). */
  private final ArrayDeque<Map.Entry<Path, FileChannel>> files = new ArrayDeque<>();
  private FileChannel current;
  private long offset;
  private long created;

  RotatingFiles(Path dir, long fileBytes, long capacityBytes) throws IOException {
    this.dir = Files.createDirectories(dir);
    this.fileBytes = fileBytes;
    this.capacityBytes = capacityBytes;
  }

  /** Appends {@code src}'s remaining bytes (without moving its position). */
  int write(ByteBuffer src) throws IOException {
    int n = src.remaining();
    if (current == null || offset + n > fileBytes) {
      next();
    }
    ByteBuffer b = src.duplicate();
    while (b.hasRemaining()) {
      offset += current.write(b, offset);
    }
    return n;
  }

  /** Forces every file written since the last force, as the tier's periodic sync does. */
  void force() throws IOException {
    for (Map.Entry<Path, FileChannel> f : files) {
      if (f.getValue().isOpen()) {
        f.getValue().force(false);
        if (f.getValue() != current) {
          f.getValue().close();
        }
      }
    }
  }

  private void next() throws IOException {
    while ((files.size() + 1) * fileBytes > capacityBytes && !files.isEmpty()) {
      Map.Entry<Path, FileChannel> oldest = files.removeFirst();
      oldest.getValue().close();
      Files.delete(oldest.getKey());
    }
    Path file = dir.resolve("file-" + created++);
    current = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
    files.addLast(Map.entry(file, current));
    offset = 0;
  }

  @Override
  public void close() throws IOException {
    for (Map.Entry<Path, FileChannel> f : files) {
      f.getValue().close();
    }
  }
}
