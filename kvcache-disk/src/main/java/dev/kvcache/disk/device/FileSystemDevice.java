package dev.kvcache.disk.device;

import com.sun.nio.file.ExtendedOpenOption;
import dev.kvcache.internal.memory.Unmapper;
import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.DirectoryStream;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operating system's file system, through {@link FileChannel}: positional writes and reads go
 * through the page cache (direct writes past it, where the file system takes {@code O_DIRECT}), a
 * file is read through a read-only {@code mmap} of it, {@link
 * DeviceFile#force} is {@code fdatasync}, and a directory is forced by {@code fsync} of the
 * directory itself. Files are created {@code 0600} in a {@code 0700} directory.
 */
public final class FileSystemDevice implements StorageDevice {

  private static final Logger log = LoggerFactory.getLogger(FileSystemDevice.class);

  /** The one instance. */
  public static final FileSystemDevice INSTANCE = new FileSystemDevice();

  /** The name of the file locked in a directory that a tier has open. */
  public static final String LOCK_FILE = "lock";

  private final Map<Path, FileStore> stores = new ConcurrentHashMap<>();

  private FileSystemDevice() {}

  @Override
  public void prepareDirectory(Path dir) throws IOException {
    OwnerOnly.prepareDirectory(dir);
  }

  @Override
  public List<String> list(Path dir) throws IOException {
    List<String> names = new ArrayList<>();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
      for (Path p : files) {
        names.add(p.getFileName().toString());
      }
    }
    return names;
  }

  @Override
  public DeviceFile create(Path file) throws IOException {
    return new ChannelFile(this, file, FileChannel.open(file, Set.of(StandardOpenOption.CREATE_NEW,
        StandardOpenOption.READ, StandardOpenOption.WRITE),
        OwnerOnly.fileAttributes(file.toAbsolutePath().getParent())));
  }

  @Override
  public DeviceFile open(Path file, boolean writable) throws IOException {
    return new ChannelFile(this, file, writable
        ? FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)
        : FileChannel.open(file, StandardOpenOption.READ));
  }

  @Override
  public boolean exists(Path file) {
    return Files.exists(file);
  }

  @Override
  public void rename(Path source, Path target) throws IOException {
    Files.move(source, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
  }

  @Override
  public boolean delete(Path file) throws IOException {
    return Files.deleteIfExists(file);
  }

  @Override
  public void forceDirectory(Path dir) throws IOException {
    try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
      ch.force(true);
    }
  }

  @Override
  public long usableBytes(Path dir) throws IOException {
    return store(dir).getUsableSpace();
  }

  @Override
  public long totalBytes(Path dir) throws IOException {
    return store(dir).getTotalSpace();
  }

  /** The file system {@code dir} is on, looked up once (the lookup reads the mount table). */
  private FileStore store(Path dir) throws IOException {
    Path key = dir.toAbsolutePath().normalize();
    FileStore store = stores.get(key);
    if (store == null) {
      store = Files.getFileStore(key);
      stores.put(key, store);
    }
    return store;
  }

  @Override
  public long size(Path file) throws IOException {
    return Files.size(file);
  }

  @Override
  public Closeable tryLock(Path dir) throws IOException {
    FileChannel ch = FileChannel.open(dir.resolve(LOCK_FILE),
        EnumSet.of(StandardOpenOption.CREATE, StandardOpenOption.WRITE),
        OwnerOnly.fileAttributes(dir));
    FileLock lock;
    try {
      lock = ch.tryLock();
    } catch (IOException | RuntimeException e) {
      ch.close();
      throw e;
    }
    if (lock == null) {
      ch.close();
      return null;
    }
    return () -> {
      try {
        lock.release();
      } finally {
        ch.close();
      }
    };
  }

  @Override
  public String toString() {
    return "file system";
  }

  /**
   * A file as a {@link FileChannel}; for direct writes and reads, a second channel of it opened
   * with {@code O_DIRECT} ({@link ExtendedOpenOption#DIRECT}) the first time they are asked for.
   * Direct IO must keep to the file system's block size (the JDK checks position, length and
   * address).
   */
  private static final class ChannelFile implements DeviceFile {
    private final FileSystemDevice device;
    private final Path path;
    private final FileChannel channel;
    /** Null until {@link #directAlignment} opened it, and if the file system refuses it. */
    private volatile FileChannel direct;
    /** -1 until {@link #directAlignment} is first asked. */
    private volatile int alignment = -1;

    ChannelFile(FileSystemDevice device, Path path, FileChannel channel) {
      this.device = device;
      this.path = path;
      this.channel = channel;
    }

    @Override
    public Path path() {
      return path;
    }

    @Override
    public long size() throws IOException {
      return channel.size();
    }

    @Override
    public void write(ByteBuffer src, long position) throws IOException {
      while (src.hasRemaining()) {
        position += channel.write(src, position);
      }
    }

    @Override
    public int read(ByteBuffer dst, long position) throws IOException {
      int total = 0;
      while (dst.hasRemaining()) {
        int n = channel.read(dst, position + total);
        if (n < 0) {
          break;
        }
        total += n;
      }
      return total;
    }

    @Override
    public void setSize(long size) throws IOException {
      long now = channel.size();
      if (size < now) {
        channel.truncate(size);
      } else if (size > now) {
        channel.write(ByteBuffer.allocate(1), size - 1); // sparse up to there
      }
    }

    @Override
    public void force() throws IOException {
      channel.force(false);
    }

    @Override
    public ByteBuffer map(long length) throws IOException {
      return channel.map(FileChannel.MapMode.READ_ONLY, 0, length);
    }

    @Override
    public void unmap(ByteBuffer view) {
      Unmapper.unmap(view);
    }

    @Override
    public int directAlignment() {
      int known = alignment;
      return known >= 0 ? known : openDirect();
    }

    private synchronized int openDirect() {
      if (alignment < 0) {
        int found = 0;
        try {
          long block = device.store(path.toAbsolutePath().getParent()).getBlockSize();
          direct = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE,
              ExtendedOpenOption.DIRECT);
          found = (int) block;
        } catch (IOException | UnsupportedOperationException e) {
          log.info("{}: no direct IO on its file system ({}); writes and reads go through the "
              + "page cache", path, e.toString());
        }
        alignment = found; // published after the channel that a caller it answers will use
      }
      return alignment;
    }

    @Override
    public void writeDirect(ByteBuffer src, long position) throws IOException {
      FileChannel d = direct;
      if (d == null) {
        throw new UnsupportedOperationException(path + " takes no direct writes");
      }
      DirectIoCheck.requireAligned(src, position, alignment, path, "write");
      while (src.hasRemaining()) {
        position += d.write(src, position);
      }
    }

    @Override
    public int readDirect(ByteBuffer dst, long position) throws IOException {
      FileChannel d = direct;
      if (d == null) {
        return read(dst, position);
      }
      DirectIoCheck.requireAligned(dst, position, alignment, path, "read");
      int total = 0;
      while (dst.hasRemaining()) {
        int n = d.read(dst, position + total);
        if (n <= 0) {
          break; // the end of the file (a direct read past it reads nothing)
        }
        total += n;
      }
      return total;
    }

    @Override
    public void close() throws IOException {
      try {
        channel.close();
      } finally {
        FileChannel d = direct;
        if (d != null) {
          d.close();
        }
      }
    }
  }
}
