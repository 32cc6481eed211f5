package dev.kvcache.disk;

import java.io.IOException;
import java.nio.file.Path;

/** Thrown when a disk tier's directory is already open, in this process or another. */
public final class DirectoryLockedException extends IOException {

  private static final long serialVersionUID = 1L;

  private final Path directory;

  public DirectoryLockedException(Path directory, String detail) {
    super("the disk tier directory " + directory + " is already in use (" + detail
        + "); one process, and one DiskTier in it, may open a directory at a time");
    this.directory = directory;
  }

  /** The directory that was locked. */
  public Path directory() {
    return directory;
  }
}
