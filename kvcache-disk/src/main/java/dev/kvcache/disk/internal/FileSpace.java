package dev.kvcache.disk.internal;

import dev.kvcache.disk.device.StorageDevice;
import java.io.IOException;
import java.nio.file.Path;

/**
 * The free and total space where a tier's directory is. An interface so that tests can play a
 * file system filling up and emptying without mounting one.
 */
public interface FileSpace {

  /** Bytes this process may still write on the file system. */
  long usableBytes() throws IOException;

  /** The file system's size in bytes. */
  long totalBytes() throws IOException;

  /** The space {@code device} reports for {@code dir}. */
  static FileSpace of(StorageDevice device, Path dir) {
    return new FileSpace() {
      @Override
      public long usableBytes() throws IOException {
        return device.usableBytes(dir);
      }

      @Override
      public long totalBytes() throws IOException {
        return device.totalBytes(dir);
      }
    };
  }
}
