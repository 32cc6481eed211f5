package dev.kvcache;

import java.nio.file.Path;
import java.util.Objects;

/**
 * Where a block's bytes lie in a file of shared memory (on a tmpfs such as {@code /dev/shm}) that
 * another process on the same host may map read-only and copy from, instead of receiving the bytes
 * through a socket. Valid only while the lease or pin that gave it stays open: after that, the
 * range may hold another block.
 *
 * @param file the file, readable by the user the cache runs as
 * @param offset the block's first byte in the file
 * @param length the block's length in bytes
 */
public record SharedMemorySlice(Path file, long offset, int length) {

  /**
   * @throws IllegalArgumentException if {@code offset} is negative or {@code length} not positive
   */
  public SharedMemorySlice {
    Objects.requireNonNull(file, "file");
    if (offset < 0 || length < 1) {
      throw new IllegalArgumentException("bad slice: offset " + offset + ", length " + length);
    }
  }
}
