package dev.kvcache.disk.device;

import java.nio.ByteBuffer;
import java.nio.file.Path;

/** The alignment a direct write must keep ({@link DeviceFile#writeDirect}). */
final class DirectWriteCheck {

  /** The alignment of direct writes to files in memory: the page, as the file systems here. */
  static final int MEMORY_ALIGNMENT = 4096;

  private DirectWriteCheck() {}

  /**
   * @throws IllegalArgumentException unless {@code src} is direct and its address, its remaining
   *     length and {@code position} are multiples of {@code alignment}
   */
  static void requireAligned(ByteBuffer src, long position, int alignment, Path path) {
    if (!src.isDirect() || position % alignment != 0 || src.remaining() % alignment != 0
        || src.alignmentOffset(src.position(), alignment) != 0) {
      throw new IllegalArgumentException(String.format(
          "a direct write of %d bytes at %d in %s is not aligned to %d bytes (%s buffer)",
          src.remaining(), position, path, alignment, src.isDirect() ? "direct" : "heap"));
    }
  }
}
