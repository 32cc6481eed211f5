package dev.kvcache.disk.internal;

import dev.kvcache.disk.DirectoryLockedException;
import dev.kvcache.disk.device.StorageDevice;
import java.io.Closeable;
import java.io.IOException;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Path;

/** An exclusive lock on a tier's directory, held while a tier (or the tool) has it open. */
public final class DirectoryLock implements AutoCloseable {

  private final Closeable lock;

  private DirectoryLock(Closeable lock) {
    this.lock = lock;
  }

  /**
   * Locks {@code dir} on {@code device}.
   *
   * @throws DirectoryLockedException if this process or another holds it
   */
  public static DirectoryLock acquire(StorageDevice device, Path dir) throws IOException {
    Closeable lock;
    try {
      lock = device.tryLock(dir);
    } catch (OverlappingFileLockException e) {
      throw new DirectoryLockedException(dir, "open in this process");
    }
    if (lock == null) {
      throw new DirectoryLockedException(dir, "locked by another process");
    }
    return new DirectoryLock(lock);
  }

  @Override
  public void close() throws IOException {
    lock.close();
  }
}
