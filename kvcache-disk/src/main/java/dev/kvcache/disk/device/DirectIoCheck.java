package dev.kvcache.disk.device;

import java.nio.ByteBuffer;
import java.nio.file.Path;

/**
 * The alignment direct IO must keep ({@link DeviceFile#writeDirect}, {@link
 * DeviceFile#readDirect}).
 */
final class DirectIoCheck {

  /** The alignment of direct IO to files in memory: the page, as the file systems here. */
  static final int MEMORY_ALIGNMENT = 4096;

  private DirectIoCheck() {}

  /**
   * @param op what the direct call does, for the message: "write" or "read"
   * @throws IllegalArgumentException unless {@code buffer} is direct and its address, its remaining
   *     length and {@code position} are multiples of {@code alignment}
   */
  static void requireAligned(ByteBuffer buffer, long position, int alignment, Path path,
      String op) {
    if (!buffer.isDirect() || position % alignment != 0 || buffer.remaining() % alignment != 0
        || buffer.alignmentOffset(buffer.position(), alignment) != 0) {
      throw new IllegalArgumentException(String.format(
          "a direct %s of %d bytes at %d in %s is not aligned to %d bytes (%s buffer)",
          op, buffer.remaining(), position, path, alignment,
          buffer.isDirect() ? "direct" : "heap"));
    }
  }
}
