package dev.kvcache.server.local;

import com.sun.jna.LastErrorException;
import com.sun.jna.Native;
import com.sun.jna.Platform;
import dev.kvcache.server.errors.ApiException;
import io.micronaut.http.HttpStatus;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * A client's file, opened for writing, with what the server knows of it read through the
 * descriptor it opened rather than through the path: a path checked and then opened may name
 * another file by the time it is opened (a symbolic link swapped in between), and a check of the
 * path would then hand on one file's identity with another's contents.
 *
 * <p>The path is opened once with {@code open(2)}; the file's identity, type, link count and real
 * name are read from {@code /proc/self/fd/<n>}, which names the file that descriptor holds, and
 * the channel is opened through that same name, which reaches the file the descriptor holds
 * whatever its path names now.
 *
 * @param channel the file, open to read and write
 * @param identity its device and inode ({@code BasicFileAttributes.fileKey})
 * @param device its device number
 * @param links how many names it has (0 once unlinked)
 * @param realName the name the kernel gives it, without {@code " (deleted)"} if it was unlinked
 */
record OpenedFile(FileChannel channel, Object identity, long device, int links,
    Path realName) {

  private static final int O_RDWR = 2;
  private static final int O_NOCTTY = 0x100;
  private static final int O_NONBLOCK = 0x800; // a FIFO or a device does not hold up the open
  private static final int O_CLOEXEC = 0x80000;
  private static final int ENOENT = 2;
  private static final int EACCES = 13;
  private static final int EPERM = 1;
  private static final String DELETED = " (deleted)";

  /** {@code open(2)} and {@code close(2)}, bound directly to the C library. */
  private static final class LibC {
    static {
      Native.register(Platform.C_LIBRARY_NAME);
    }

    static native int open(String path, int flags) throws LastErrorException;

    static native int close(int fd) throws LastErrorException;
  }

  /**
   * Opens {@code path} for reading and writing: 404 {@code no-file} if there is none, 403
   * {@code file-not-writable} if the server may not open it so, 400 {@code bad-copy} unless it is
   * a regular file.
   */
  static OpenedFile open(Path path) {
    int fd = openDescriptor(path);
    try {
      Path held = Path.of("/proc/self/fd/" + fd);
      BasicFileAttributes attributes = Files.readAttributes(held, BasicFileAttributes.class);
      if (!attributes.isRegularFile()) {
        throw new ApiException(HttpStatus.BAD_REQUEST, "bad-copy",
            path + " is not a regular file");
      }
      long device = (Long) Files.getAttribute(held, "unix:dev");
      int links = (Integer) Files.getAttribute(held, "unix:nlink");
      String name = Files.readSymbolicLink(held).toString();
      if (links == 0 && name.endsWith(DELETED)) {
        name = name.substring(0, name.length() - DELETED.length());
      }
      FileChannel channel = FileChannel.open(held, StandardOpenOption.READ,
          StandardOpenOption.WRITE);
      return new OpenedFile(channel, attributes.fileKey(), device, links, Path.of(name));
    } catch (IOException e) {
      throw new ApiException(HttpStatus.FORBIDDEN, "file-not-writable",
          "the server cannot open " + path + ": " + e.getMessage());
    } finally {
      try {
        LibC.close(fd);
      } catch (LastErrorException ignored) {
        // the descriptor is gone either way
      }
    }
  }

  private static int openDescriptor(Path path) {
    try {
      return LibC.open(path.toString(), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    } catch (LastErrorException e) {
      switch (e.getErrorCode()) {
        case ENOENT:
          throw new ApiException(HttpStatus.NOT_FOUND, "no-file", "no file " + path);
        case EACCES:
        case EPERM:
          throw new ApiException(HttpStatus.FORBIDDEN, "file-not-writable",
              "the server may not write " + path + " (run it as the engine's user)");
        default:
          throw new ApiException(HttpStatus.FORBIDDEN, "file-not-writable",
              "the server cannot open " + path + ": " + e.getMessage());
      }
    } catch (UnsatisfiedLinkError | NoClassDefFoundError e) {
      throw new ApiException(HttpStatus.NOT_IMPLEMENTED, "no-copies",
          "this server cannot open clients' files (" + e + "): read the blocks through the lease");
    }
  }
}
