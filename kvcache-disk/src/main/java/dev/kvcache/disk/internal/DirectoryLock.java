package dev.kvcache.disk.internal;

import dev.kvcache.disk.DirectoryLockedException;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Set;

/** An exclusive lock on a directory's {@code lock} file, held while a tier has it open. */
public final class DirectoryLock implements AutoCloseable {

  public static final String FILE_NAME = "lock";

  private final FileChannel channel;
  private final FileLock lock;

  private DirectoryLock(FileChannel channel, FileLock lock) {
    this.channel = channel;
    this.lock = lock;
  }

  public static DirectoryLock acquire(Path dir) throws IOException {
    FileChannel ch = FileChannel.open(dir.resolve(FILE_NAME),
        Set.of(StandardOpenOption.CREATE, StandardOpenOption.WRITE), OwnerOnly.fileAttributes(dir));
    FileLock lock;
    try {
      lock = ch.tryLock();
    } catch (OverlappingFileLockException e) {
      ch.close();
      throw new DirectoryLockedException(dir, "open in this process");
    } catch (IOException | RuntimeException e) {
      ch.close();
      throw e;
    }
    if (lock == null) {
      ch.close();
      throw new DirectoryLockedException(dir, "locked by another process");
    }
    return new DirectoryLock(ch, lock);
  }

  @Override
  public void close() throws IOException {
    try {
      lock.release();
    } finally {
      channel.close();
    }
  }
}
