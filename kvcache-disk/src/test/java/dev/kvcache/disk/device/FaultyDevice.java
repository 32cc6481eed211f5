package dev.kvcache.disk.device;

import dev.kvcache.disk.device.MemoryDevice.MemoryFile;
import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A device for tests that fails as disks and file systems do, after LazyFS and Lucene's {@code
 * MockDirectoryWrapper}. Files live in memory ({@link MemoryDevice}'s files); what a force would
 * have put on the device is tracked beside them, so that {@link #cutPower} can build the state a
 * power loss leaves:
 *
 * <ul>
 *   <li>each write not yet forced independently survives whole, is lost, or is torn (each of its
 *       512-byte sectors kept or lost on its own), applied in a random order; a size change not
 *       yet forced is kept or lost;
 *   <li>files created, renamed or deleted since their directory was last forced: a random prefix
 *       of those changes is kept, the rest reverts (a created file vanishes, a deleted one comes
 *       back with what was forced of it);
 *   <li>a force that fails ({@link Fault} on {@link Op#FORCE}) loses the writes it held for good:
 *       a later successful force does not bring them back (as Linux after an {@code fsync} error).
 * </ul>
 *
 * <p>The tier under test opens its files through a {@link #session()}: after a power cut, every
 * call of an earlier session fails (the process died with the power), and a new session sees the
 * surviving state. A {@link Fault} decides before each operation whether it fails (EIO, ENOSPC,
 * a failed force) and may delay it; {@link #cutPowerAfter} cuts the power at a chosen operation.
 */
public final class FaultyDevice {

  /** The operations a fault or a power cut can fall on. */
  public enum Op {
    LIST, CREATE, OPEN, EXISTS, RENAME, DELETE, FORCE_DIRECTORY, LOCK, SPACE,
    SIZE, WRITE, WRITE_DIRECT, READ, SET_SIZE, FORCE, MAP
  }

  /** Decides whether an operation fails; runs before it, on the caller's thread, and may block. */
  @FunctionalInterface
  public interface Fault {
    /** The exception the operation throws (having done nothing), or null to let it run. */
    IOException before(Op op, Path path);
  }

  private static final int SECTOR = 512;

  private final long capacityBytes;
  private final Random random;
  private final AtomicLong used = new AtomicLong();
  /** Taken shared by every operation, exclusively by a power cut. */
  private final ReentrantReadWriteLock power = new ReentrantReadWriteLock();
  private volatile int epoch;
  /** Directory entries as a process sees them; guarded by {@code this}. */
  private final Map<Path, Node> names = new HashMap<>();
  /** Directory entries as the device holds them (as of each directory's last force). */
  private final Map<Path, Node> durableNames = new HashMap<>();
  /** Changes to directory entries since their directory's last force, oldest first. */
  private final List<DirectoryChange> pendingChanges = new ArrayList<>();
  private final Set<Path> directories = new HashSet<>();
  private final Set<Path> locked = new HashSet<>();
  private final AtomicLong operations = new AtomicLong();
  private final AtomicLong cutAt = new AtomicLong(-1);
  private final AtomicLong cuts = new AtomicLong();
  private volatile Fault fault = (op, path) -> null;
  private volatile Runnable onCut = () -> {};
  private volatile int directAlignment = DirectIoCheck.MEMORY_ALIGNMENT;

  /** A device of {@code capacityBytes}, whose power cuts draw from {@code seed}. */
  public FaultyDevice(long capacityBytes, long seed) {
    this.capacityBytes = capacityBytes;
    // scrambled: Random's first draws from nearby seeds agree
    this.random = new Random(new SplittableRandom(seed).nextLong());
  }

  /** The device as the process now running sees it; dead after the next power cut. */
  public StorageDevice session() {
    return new Session(epoch);
  }

  /** Sets the fault every later operation consults. */
  public void fault(Fault fault) {
    this.fault = fault;
  }

  /**
   * The alignment its files' direct writes need, checked at each; 0 for a device that takes none
   * (as a file system that refuses {@code O_DIRECT}). The page (4096) unless set.
   */
  public void directAlignment(int alignment) {
    this.directAlignment = alignment;
  }

  /** Runs {@code action} at each power cut, at the instant of the cut (no operation runs). */
  public void onCut(Runnable action) {
    this.onCut = action;
  }

  /** Operations run so far, of every session. */
  public long operations() {
    return operations.get();
  }

  /** Power cuts so far. */
  public long cuts() {
    return cuts.get();
  }

  /** Cuts the power when operation number {@code operation} ({@link #operations}) starts. */
  public void cutPowerAt(long operation) {
    cutAt.set(operation);
  }

  /** Cuts the power {@code ops} operations from now. */
  public void cutPowerAfter(long ops) {
    cutPowerAt(operations.get() + ops);
  }

  /** Whether the power was cut since {@code session} started. */
  public boolean cutSince(StorageDevice session) {
    return ((Session) session).epoch != epoch;
  }

  /**
   * Loses power now: what was not forced survives, is lost or is torn (see the class comment), and
   * every session open so far is dead.
   */
  public void cutPower() {
    power.writeLock().lock();
    try {
      epoch++;
      cuts.incrementAndGet();
      onCut.run();
      cutAt.set(-1);
      Map<Path, Node> after = new HashMap<>(durableNames);
      int kept = random.nextInt(pendingChanges.size() + 1);
      for (DirectoryChange change : pendingChanges.subList(0, kept)) {
        change.apply(after);
      }
      pendingChanges.clear();
      names.clear();
      durableNames.clear();
      locked.clear();
      used.set(0);
      Map<Node, Node> survivors = new IdentityHashMap<>();
      for (Map.Entry<Path, Node> e : after.entrySet()) {
        Node n = survivors.computeIfAbsent(e.getValue(), old -> survivor(old, e.getKey()));
        names.put(e.getKey(), n);
        durableNames.put(e.getKey(), n);
      }
    } finally {
      power.writeLock().unlock();
    }
  }

  /** What the device holds of {@code old} after a power loss. */
  private Node survivor(Node old, Path path) {
    byte[] image;
    synchronized (old) {
      image = Arrays.copyOf(old.durable, (int) old.durableSize);
      List<Pending> unforced = new ArrayList<>(old.pending);
      Collections.shuffle(unforced, random);
      for (Pending p : unforced) {
        if (p.bytes == null) { // a size change
          if (random.nextBoolean()) {
            image = Arrays.copyOf(image, (int) p.position);
          }
          continue;
        }
        switch (random.nextInt(3)) {
          case 0 -> image = apply(image, p.position, p.bytes, 0, p.bytes.length);
          case 1 -> { } // lost
          default -> { // torn: sector by sector
            long from = p.position;
            long end = p.position + p.bytes.length;
            while (from < end) {
              long sectorEnd = Math.min(end, (from / SECTOR + 1) * SECTOR);
              if (random.nextBoolean()) {
                image = apply(image, from, p.bytes, (int) (from - p.position),
                    (int) (sectorEnd - from));
              }
              from = sectorEnd;
            }
          }
        }
      }
    }
    Node n = new Node(new MemoryFile(path, used, capacityBytes));
    try {
      n.current.write(ByteBuffer.wrap(image), 0);
    } catch (IOException e) {
      throw new IllegalStateException("the device cannot hold what it held", e);
    }
    n.durable = image;
    n.durableSize = image.length;
    return n;
  }

  private static byte[] apply(byte[] image, long position, byte[] src, int from, int length) {
    int end = (int) position + length;
    byte[] out = end > image.length ? Arrays.copyOf(image, end) : image;
    System.arraycopy(src, from, out, (int) position, length);
    return out;
  }

  private static Path key(Path path) {
    return path.toAbsolutePath().normalize();
  }

  /** A file: what processes see, and what the device holds. */
  private static final class Node {
    final MemoryFile current;
    /** The bytes on the device as of the last force (the first {@link #durableSize} count). */
    byte[] durable = new byte[0];
    long durableSize;
    /** Writes and size changes since the last force, in order; guarded by the node. */
    final List<Pending> pending = new ArrayList<>();

    Node(MemoryFile current) {
      this.current = current;
    }

    synchronized void write(ByteBuffer src, long position) throws IOException {
      byte[] bytes = new byte[src.remaining()];
      src.duplicate().get(bytes);
      current.write(src, position);
      pending.add(new Pending(position, bytes));
    }

    synchronized void setSize(long size) throws IOException {
      current.setSize(size);
      pending.add(new Pending(size, null));
    }

    synchronized void force() {
      byte[] image = durable;
      for (Pending p : pending) {
        image = p.bytes == null ? Arrays.copyOf(image, (int) p.position)
            : apply(image, p.position, p.bytes, 0, p.bytes.length);
      }
      durableSize = current.size();
      durable = Arrays.copyOf(image, (int) durableSize);
      pending.clear();
    }

    /** A force failed: the writes it held never reach the device. */
    synchronized void forceFailed() {
      pending.clear();
    }
  }

  /** A write ({@code bytes} at {@code position}) or a size change (no bytes, the new size). */
  private record Pending(long position, byte[] bytes) {}

  /** A change to directory entries: a file created, renamed or deleted. */
  private record DirectoryChange(Path dir, Path name, Path to, Node node) {
    void apply(Map<Path, Node> entries) {
      if (to != null) { // renamed
        Node n = entries.remove(name);
        if (n != null) {
          entries.put(to, n);
        }
      } else if (node != null) { // created
        entries.put(name, node);
      } else { // deleted
        entries.remove(name);
      }
    }
  }

  @FunctionalInterface
  private interface Call<T> {
    T run() throws IOException;
  }

  /** The device as one process sees it, from its start to the next power cut. */
  private final class Session implements StorageDevice {
    final int epoch;

    Session(int epoch) {
      this.epoch = epoch;
    }

    <T> T run(Op op, Path path, Call<T> call) throws IOException {
      return run(op, path, call, null);
    }

    /** Runs {@code call} unless the power is cut or a fault fails it (then {@code onFault} runs). */
    <T> T run(Op op, Path path, Call<T> call, Runnable onFault) throws IOException {
      IOException failure = fault.before(op, path);
      long n = operations.incrementAndGet();
      if (n == cutAt.get()) {
        cutPower();
      }
      power.readLock().lock();
      try {
        if (epoch != FaultyDevice.this.epoch) {
          throw new IOException("the device lost power (" + op + " " + path + ")");
        }
        if (failure != null) {
          if (onFault != null) {
            onFault.run();
          }
          throw failure;
        }
        return call.run();
      } finally {
        power.readLock().unlock();
      }
    }

    private Node node(Path file) throws NoSuchFileException {
      synchronized (FaultyDevice.this) {
        Node n = names.get(key(file));
        if (n == null) {
          throw new NoSuchFileException(file.toString());
        }
        return n;
      }
    }

    @Override
    public void prepareDirectory(Path dir) throws IOException {
      run(Op.CREATE, dir, () -> {
        synchronized (FaultyDevice.this) {
          directories.add(key(dir)); // directories themselves are taken as durable
        }
        return null;
      });
    }

    @Override
    public List<String> list(Path dir) throws IOException {
      return run(Op.LIST, dir, () -> {
        synchronized (FaultyDevice.this) {
          if (!directories.contains(key(dir))) {
            throw new NoSuchFileException(dir.toString());
          }
          List<String> found = new ArrayList<>();
          for (Path p : names.keySet()) {
            if (key(dir).equals(p.getParent())) {
              found.add(p.getFileName().toString());
            }
          }
          return found;
        }
      });
    }

    @Override
    public DeviceFile create(Path file) throws IOException {
      return run(Op.CREATE, file, () -> {
        Path k = key(file);
        synchronized (FaultyDevice.this) {
          if (!directories.contains(k.getParent())) {
            throw new NoSuchFileException(file.toString(), null, "no such directory");
          }
          if (names.containsKey(k)) {
            throw new FileAlreadyExistsException(file.toString());
          }
          Node n = new Node(new MemoryFile(file, used, capacityBytes));
          names.put(k, n);
          pendingChanges.add(new DirectoryChange(k.getParent(), k, null, n));
          return new Handle(this, n, file);
        }
      });
    }

    @Override
    public DeviceFile open(Path file, boolean writable) throws IOException {
      return run(Op.OPEN, file, () -> new Handle(this, node(file), file));
    }

    @Override
    public boolean exists(Path file) throws IOException {
      return run(Op.EXISTS, file, () -> {
        synchronized (FaultyDevice.this) {
          return names.containsKey(key(file));
        }
      });
    }

    @Override
    public void rename(Path source, Path target) throws IOException {
      run(Op.RENAME, source, () -> {
        synchronized (FaultyDevice.this) {
          Node n = names.remove(key(source));
          if (n == null) {
            throw new NoSuchFileException(source.toString());
          }
          Node replaced = names.put(key(target), n);
          if (replaced != null && replaced != n) {
            replaced.current.deleted();
          }
          pendingChanges.add(new DirectoryChange(key(source).getParent(), key(source),
              key(target), null));
          return null;
        }
      });
    }

    @Override
    public boolean delete(Path file) throws IOException {
      return run(Op.DELETE, file, () -> {
        synchronized (FaultyDevice.this) {
          Node n = names.remove(key(file));
          if (n == null) {
            return false;
          }
          n.current.deleted();
          pendingChanges.add(new DirectoryChange(key(file).getParent(), key(file), null, null));
          return true;
        }
      });
    }

    @Override
    public void forceDirectory(Path dir) throws IOException {
      run(Op.FORCE_DIRECTORY, dir, () -> {
        synchronized (FaultyDevice.this) {
          Path d = key(dir);
          List<DirectoryChange> rest = new ArrayList<>();
          for (DirectoryChange change : pendingChanges) {
            if (change.dir().equals(d)) {
              change.apply(durableNames);
            } else {
              rest.add(change);
            }
          }
          pendingChanges.clear();
          pendingChanges.addAll(rest);
          return null;
        }
      });
    }

    @Override
    public long usableBytes(Path dir) throws IOException {
      return run(Op.SPACE, dir, () -> capacityBytes - used.get());
    }

    @Override
    public long totalBytes(Path dir) throws IOException {
      return run(Op.SPACE, dir, () -> capacityBytes);
    }

    @Override
    public Closeable tryLock(Path dir) throws IOException {
      return run(Op.LOCK, dir, () -> {
        synchronized (FaultyDevice.this) {
          if (!locked.add(key(dir))) {
            throw new OverlappingFileLockException();
          }
        }
        return () -> {
          synchronized (FaultyDevice.this) {
            if (epoch == FaultyDevice.this.epoch) {
              locked.remove(key(dir));
            }
          }
        };
      });
    }

    @Override
    public String toString() {
      return "faulty device, session " + epoch;
    }
  }

  /** An open file of a session. */
  private final class Handle implements DeviceFile {
    private final Session session;
    private final Node node;
    private final Path path;

    Handle(Session session, Node node, Path path) {
      this.session = session;
      this.node = node;
      this.path = path;
    }

    @Override
    public Path path() {
      return path;
    }

    @Override
    public long size() throws IOException {
      return session.run(Op.SIZE, path, node.current::size);
    }

    @Override
    public void write(ByteBuffer src, long position) throws IOException {
      session.run(Op.WRITE, path, () -> {
        node.write(src, position);
        return null;
      });
    }

    @Override
    public int directAlignment() {
      return directAlignment;
    }

    /** As {@link #write} (a direct write is as volatile until forced), its alignment checked. */
    @Override
    public void writeDirect(ByteBuffer src, long position) throws IOException {
      int alignment = directAlignment;
      if (alignment == 0) {
        throw new UnsupportedOperationException(path + " takes no direct writes");
      }
      DirectIoCheck.requireAligned(src, position, alignment, path, "write");
      session.run(Op.WRITE_DIRECT, path, () -> {
        node.write(src, position);
        return null;
      });
    }

    @Override
    public int read(ByteBuffer dst, long position) throws IOException {
      return session.run(Op.READ, path, () -> node.current.read(dst, position));
    }

    /** As {@link #read}, its alignment checked where the file takes direct IO. */
    @Override
    public int readDirect(ByteBuffer dst, long position) throws IOException {
      int alignment = directAlignment;
      if (alignment > 0) {
        DirectIoCheck.requireAligned(dst, position, alignment, path, "read");
      }
      return read(dst, position);
    }

    @Override
    public void setSize(long size) throws IOException {
      session.run(Op.SET_SIZE, path, () -> {
        node.setSize(size);
        return null;
      });
    }

    @Override
    public void force() throws IOException {
      session.run(Op.FORCE, path, () -> {
        node.force();
        return null;
      }, node::forceFailed);
    }

    @Override
    public ByteBuffer map(long length) throws IOException {
      return session.run(Op.MAP, path, () -> node.current.map(length));
    }

    @Override
    public void unmap(ByteBuffer view) {
      node.current.unmap();
    }

    @Override
    public void close() {}
  }
}
