package dev.kvcache;

import java.nio.file.Path;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * Where a block's bytes lie in a file of shared memory (on a tmpfs such as {@code /dev/shm}) that
 * another process on the same host may map read-only and copy from, instead of receiving the bytes
 * through a socket. Valid only while the lease or pin that gave it stays open: after that, the
 * range may hold another block.
 *
 * @param file the file, readable by the user the cache runs as
 * @param offset the block's first byte in the file
 * @param length the block's length in bytes
 * @param crc32c the CRC32C of the block's bytes as they were stored, for a reader to check its copy
 *     against (shared memory can be written by any process its file's permissions let in); empty
 *     if the block was stored without one
 */
public record SharedMemorySlice(Path file, long offset, int length, OptionalInt crc32c) {

  /**
   * @throws IllegalArgumentException if {@code offset} is negative or {@code length} not positive
   */
  public SharedMemorySlice {
    Objects.requireNonNull(file, "file");
    Objects.requireNonNull(crc32c, "crc32c");
    if (offset < 0 || length < 1) {
      throw new IllegalArgumentException("bad slice: offset " + offset + ", length " + length);
    }
  }
}
