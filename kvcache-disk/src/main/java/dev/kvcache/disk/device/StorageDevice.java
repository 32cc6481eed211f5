package dev.kvcache.disk.device;

import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * Where a disk tier's files live: every create, open, rename, delete and directory force of its
 * super-blocks, journals and checkpoint goes through one, and every write, read, map and force
 * through the {@link DeviceFile}s it opens. {@link FileSystemDevice} is the operating system's file
 * system; {@link MemoryDevice} keeps the files in memory and makes no system call, so that the
 * tier's own cost can be measured apart from the device's; tests put a device in between that
 * loses, tears and fails writes as a power loss or a failing disk would.
 *
 * <p>What a device promises is what a POSIX file system promises: a write is visible to reads and
 * mappings of the file at once; it is on the device only after a {@link DeviceFile#force} of that
 * file returns; a file created, renamed or deleted is so after a power loss only once {@link
 * #forceDirectory} of its directory returns. A file may also take direct writes (aligned
 * buffers, past the page cache: {@link DeviceFile#writeDirect}), and states the alignment they
 * need ({@link DeviceFile#directAlignment}).
 */
public interface StorageDevice {

  /**
   * Creates {@code dir} if it is missing and makes it and the files in it its owner's alone
   * ({@code 0700} and {@code 0600} where the file system has POSIX permissions).
   */
  void prepareDirectory(Path dir) throws IOException;

  /** The names of the files in {@code dir}, in no particular order. */
  List<String> list(Path dir) throws IOException;

  /**
   * Creates {@code file}, open for reading and writing, readable by its owner alone.
   *
   * @throws java.nio.file.FileAlreadyExistsException if it exists
   */
  DeviceFile create(Path file) throws IOException;

  /**
   * Opens an existing file, for reading and, with {@code writable}, writing.
   *
   * @throws java.nio.file.NoSuchFileException if it does not exist
   */
  DeviceFile open(Path file, boolean writable) throws IOException;

  /** Whether {@code file} exists. */
  boolean exists(Path file) throws IOException;

  /** Renames {@code source} to {@code target} atomically, replacing {@code target} if it exists. */
  void rename(Path source, Path target) throws IOException;

  /** Deletes {@code file}; false if it did not exist. */
  boolean delete(Path file) throws IOException;

  /** Makes the files created, renamed and deleted in {@code dir} so far survive a power loss. */
  void forceDirectory(Path dir) throws IOException;

  /** Bytes this process may still write where {@code dir} is. */
  long usableBytes(Path dir) throws IOException;

  /** The size in bytes of what {@code dir} is on. */
  long totalBytes(Path dir) throws IOException;

  /**
   * Locks {@code dir} until the lock is closed, as {@link java.nio.channels.FileChannel#tryLock}
   * does a file: null if another process holds the lock.
   *
   * @throws java.nio.channels.OverlappingFileLockException if this process holds it
   */
  Closeable tryLock(Path dir) throws IOException;

  /** The size in bytes of {@code file}. */
  default long size(Path file) throws IOException {
    try (DeviceFile f = open(file, false)) {
      return f.size();
    }
  }
}
