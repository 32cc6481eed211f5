package dev.kvcache.disk.internal;

import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The free and total space of the file system a tier's directory is on. An interface so that tests
 * can play a file system filling up and emptying without mounting one.
 */
public interface FileSpace {

  /** Bytes this process may still write on the file system. */
  long usableBytes() throws IOException;

  /** The file system's size in bytes. */
  long totalBytes() throws IOException;

  /** The file system {@code dir} is on, as the operating system reports it. */
  static FileSpace of(Path dir) throws IOException {
    FileStore store = Files.getFileStore(dir);
    return new FileSpace() {
      @Override
      public long usableBytes() throws IOException {
        return store.getUsableSpace();
      }

      @Override
      public long totalBytes() throws IOException {
        return store.getTotalSpace();
      }
    };
  }
}
