package dev.kvcache.disk.device;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * Files kept in direct memory, with no system call on any path: a write is a copy into the file's
 * memory, a mapping is a view of it, a force does nothing. For measuring what a disk tier costs
 * apart from its device (the tier over this device against a plain copy of the same bytes), and
 * for tests that need no disk. Nothing survives the JVM; {@link #usableBytes} is the capacity
 * given less what the files hold.
 */
public final class MemoryDevice implements StorageDevice {

  private final long capacityBytes;
  private final AtomicLong usedBytes = new AtomicLong();
  private final Map<Path, MemoryFile> files = new ConcurrentHashMap<>();
  private final Set<Path> directories = ConcurrentHashMap.newKeySet();
  private final Set<Path> locked = ConcurrentHashMap.newKeySet();
  /** Memory of deleted files, by capacity, for the next file that grows to that size. */
  private final Map<Integer, ArrayDeque<ByteBuffer>> free = new HashMap<>();

  /** A device that holds at most {@code capacityBytes} of files. */
  public MemoryDevice(long capacityBytes) {
    if (capacityBytes <= 0) {
      throw new IllegalArgumentException("capacityBytes must be positive, got " + capacityBytes);
    }
    this.capacityBytes = capacityBytes;
  }

  private static Path key(Path path) {
    return path.toAbsolutePath().normalize();
  }

  private void requireDirectory(Path file) throws NoSuchFileException {
    Path parent = key(file).getParent();
    if (parent == null || !directories.contains(parent)) {
      throw new NoSuchFileException(file.toString(), null, "no such directory");
    }
  }

  @Override
  public void prepareDirectory(Path dir) {
    directories.add(key(dir));
  }

  @Override
  public List<String> list(Path dir) throws IOException {
    Path d = key(dir);
    if (!directories.contains(d)) {
      throw new NoSuchFileException(dir.toString());
    }
    List<String> names = new ArrayList<>();
    for (Path p : files.keySet()) {
      if (d.equals(p.getParent())) {
        names.add(p.getFileName().toString());
      }
    }
    return names;
  }

  @Override
  public DeviceFile create(Path file) throws IOException {
    requireDirectory(file);
    MemoryFile f = new MemoryFile(file, usedBytes, capacityBytes, this::allocate);
    if (files.putIfAbsent(key(file), f) != null) {
      throw new FileAlreadyExistsException(file.toString());
    }
    return f.handle();
  }

  @Override
  public DeviceFile open(Path file, boolean writable) throws IOException {
    MemoryFile f = files.get(key(file));
    if (f == null) {
      throw new NoSuchFileException(file.toString());
    }
    return f.handle();
  }

  @Override
  public boolean exists(Path file) {
    return files.containsKey(key(file));
  }

  @Override
  public synchronized void rename(Path source, Path target) throws IOException {
    requireDirectory(target);
    MemoryFile f = files.remove(key(source));
    if (f == null) {
      throw new NoSuchFileException(source.toString());
    }
    MemoryFile replaced = files.put(key(target), f.renamed(target));
    if (replaced != null) {
      replaced.deleted();
      recycle(replaced);
    }
  }

  @Override
  public boolean delete(Path file) {
    MemoryFile f = files.remove(key(file));
    if (f == null) {
      return false;
    }
    f.deleted();
    recycle(f);
    return true;
  }

  /** Keeps a deleted file's memory for the next file of its size, unless it is still mapped. */
  private void recycle(MemoryFile f) {
    ByteBuffer released = f.release();
    if (released != null && released.capacity() > 0) {
      synchronized (free) {
        free.computeIfAbsent(released.capacity(), c -> new ArrayDeque<>()).push(released);
      }
    }
  }

  /**
   * Memory for a file of {@code capacity}: a deleted file's, zeroed (its old bytes never show), or
   * new. Super-blocks are all of one size, so the tier's memory is allocated once.
   */
  private ByteBuffer allocate(int capacity) {
    ByteBuffer reused;
    synchronized (free) {
      ArrayDeque<ByteBuffer> same = free.get(capacity);
      reused = same == null ? null : same.poll();
    }
    if (reused == null) {
      return ByteBuffer.allocateDirect(capacity);
    }
    zero(reused.duplicate().clear());
    return reused.clear();
  }

  @Override
  public void forceDirectory(Path dir) {}

  @Override
  public long usableBytes(Path dir) {
    return capacityBytes - usedBytes.get();
  }

  @Override
  public long totalBytes(Path dir) {
    return capacityBytes;
  }

  @Override
  public Closeable tryLock(Path dir) {
    Path d = key(dir);
    if (!locked.add(d)) {
      throw new OverlappingFileLockException();
    }
    return () -> locked.remove(d);
  }

  @Override
  public String toString() {
    return "memory (" + usedBytes.get() + " of " + capacityBytes + " bytes used)";
  }

  /** Zeros copied over memory a file gains or takes over. */
  private static final ByteBuffer ZEROS = ByteBuffer.allocateDirect(1 << 20).asReadOnlyBuffer();

  /** Writes zeros over {@code range}'s remaining bytes. */
  private static void zero(ByteBuffer range) {
    while (range.hasRemaining()) {
      range.put(ZEROS.duplicate().limit(Math.min(ZEROS.capacity(), range.remaining())));
    }
  }

  /** Where a file's memory comes from. */
  @FunctionalInterface
  interface Buffers {
    ByteBuffer allocate(int capacity);
  }

  /**
   * A file's bytes: one direct buffer, grown by copying (never while it is mapped), shared by every
   * handle opened on the file.
   */
  static final class MemoryFile {
    private final AtomicLong deviceUsed;
    private final long deviceCapacity;
    private final Buffers buffers;
    private final ReentrantReadWriteLock growth = new ReentrantReadWriteLock();
    private volatile Path path;
    private ByteBuffer data = ByteBuffer.allocateDirect(0);
    private volatile long size;
    private int maps;

    MemoryFile(Path path, AtomicLong deviceUsed, long deviceCapacity) {
      this(path, deviceUsed, deviceCapacity, ByteBuffer::allocateDirect);
    }

    MemoryFile(Path path, AtomicLong deviceUsed, long deviceCapacity, Buffers buffers) {
      this.path = path;
      this.deviceUsed = deviceUsed;
      this.deviceCapacity = deviceCapacity;
      this.buffers = buffers;
    }

    /** The file's memory, given back once it is deleted and unmapped; null if still mapped. */
    ByteBuffer release() {
      growth.writeLock().lock();
      try {
        if (maps > 0) {
          return null;
        }
        ByteBuffer released = data;
        data = ByteBuffer.allocateDirect(0);
        return released;
      } finally {
        growth.writeLock().unlock();
      }
    }

    MemoryFile renamed(Path to) {
      path = to;
      return this;
    }

    void deleted() {
      deviceUsed.addAndGet(-size);
    }

    DeviceFile handle() {
      return new Handle(this);
    }

    long size() {
      return size;
    }

    /** Makes the file {@code newSize} bytes, zeroing what it gains. Holds the write lock. */
    private void resize(long newSize) throws IOException {
      long old = size;
      if (newSize > old && deviceUsed.addAndGet(newSize - old) > deviceCapacity) {
        deviceUsed.addAndGet(old - newSize);
        throw new IOException("No space left on device");
      }
      if (newSize < old) {
        deviceUsed.addAndGet(newSize - old);
      }
      if (newSize > data.capacity()) {
        if (maps > 0) {
          throw new IllegalStateException(path + " grows past its mapped length");
        }
        if (newSize > Integer.MAX_VALUE) {
          throw new IOException(path + ": a memory device's files hold at most 2 GiB");
        }
        ByteBuffer bigger = buffers.allocate(
            (int) Math.min(Integer.MAX_VALUE, Math.max(newSize, 2L * data.capacity())));
        bigger.put(data.duplicate().clear().limit((int) old));
        data = bigger;
      } else if (newSize > old) {
        zero(data.duplicate().clear().position((int) old).limit((int) newSize));
      }
      size = newSize;
    }

    void write(ByteBuffer src, long position) throws IOException {
      long end = position + src.remaining();
      if (end > size) {
        growth.writeLock().lock();
        try {
          if (end > size) {
            resize(end);
          }
        } finally {
          growth.writeLock().unlock();
        }
      }
      growth.readLock().lock();
      try {
        data.duplicate().clear().position((int) position).put(src);
      } finally {
        growth.readLock().unlock();
      }
    }

    int read(ByteBuffer dst, long position) {
      growth.readLock().lock();
      try {
        long n = Math.min(dst.remaining(), size - position);
        if (n <= 0) {
          return 0;
        }
        dst.put(data.duplicate().clear().position((int) position).limit((int) (position + n)));
        return (int) n;
      } finally {
        growth.readLock().unlock();
      }
    }

    void setSize(long newSize) throws IOException {
      growth.writeLock().lock();
      try {
        resize(newSize);
      } finally {
        growth.writeLock().unlock();
      }
    }

    ByteBuffer map(long length) throws IOException {
      growth.writeLock().lock();
      try {
        if (length > size) {
          resize(length); // as a mapping past the end would be, once written: zeros
        }
        maps++;
        return data.duplicate().clear().limit((int) length).slice().asReadOnlyBuffer();
      } finally {
        growth.writeLock().unlock();
      }
    }

    void unmap() {
      growth.writeLock().lock();
      try {
        maps--;
      } finally {
        growth.writeLock().unlock();
      }
    }

    /** A copy of the file's bytes. */
    byte[] copy() {
      growth.readLock().lock();
      try {
        byte[] bytes = new byte[(int) size];
        data.duplicate().clear().get(bytes);
        return bytes;
      } finally {
        growth.readLock().unlock();
      }
    }
  }

  /** An open handle on a {@link MemoryFile}. */
  private static final class Handle implements DeviceFile {
    private final MemoryFile file;
    private volatile boolean closed;

    Handle(MemoryFile file) {
      this.file = file;
    }

    private void requireOpen() throws IOException {
      if (closed) {
        throw new java.nio.channels.ClosedChannelException();
      }
    }

    @Override
    public Path path() {
      return file.path;
    }

    @Override
    public long size() throws IOException {
      requireOpen();
      return file.size();
    }

    @Override
    public void write(ByteBuffer src, long position) throws IOException {
      requireOpen();
      file.write(src, position);
    }

    @Override
    public int directAlignment() {
      return DirectIoCheck.MEMORY_ALIGNMENT;
    }

    /** As {@link #write}, once the alignment is checked: there is no page cache to go past. */
    @Override
    public void writeDirect(ByteBuffer src, long position) throws IOException {
      DirectIoCheck.requireAligned(src, position, DirectIoCheck.MEMORY_ALIGNMENT, file.path,
          "write");
      write(src, position);
    }

    /** As {@link #read}, once the alignment is checked. */
    @Override
    public int readDirect(ByteBuffer dst, long position) throws IOException {
      DirectIoCheck.requireAligned(dst, position, DirectIoCheck.MEMORY_ALIGNMENT, file.path,
          "read");
      return read(dst, position);
    }

    @Override
    public int read(ByteBuffer dst, long position) throws IOException {
      requireOpen();
      return file.read(dst, position);
    }

    @Override
    public void setSize(long size) throws IOException {
      requireOpen();
      file.setSize(size);
    }

    @Override
    public void force() throws IOException {
      requireOpen();
    }

    @Override
    public ByteBuffer map(long length) throws IOException {
      requireOpen();
      return file.map(length);
    }

    @Override
    public void unmap(ByteBuffer view) {
      file.unmap();
    }

    @Override
    public void close() {
      closed = true;
    }
  }
}
