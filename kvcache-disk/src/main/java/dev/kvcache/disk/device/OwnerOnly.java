package dev.kvcache.disk.device;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * The disk tier's files are its owner's alone: the directory is {@code 0700} and every file in it
 * {@code 0600}, whatever the process's umask (a umask can only take bits away from a mode given at
 * creation, never add them). Blocks of every namespace share the files, so a file another local
 * user could read would pass by the server's tokens. On a file system without POSIX permissions
 * nothing is set.
 */
final class OwnerOnly {

  private static final Set<PosixFilePermission> FILE = PosixFilePermissions.fromString("rw-------");
  private static final Set<PosixFilePermission> DIRECTORY =
      PosixFilePermissions.fromString("rwx------");
  private static final FileAttribute<?>[] NONE = new FileAttribute<?>[0];

  private OwnerOnly() {}

  /** The attributes a new file in {@code dir} is created with. */
  static FileAttribute<?>[] fileAttributes(Path dir) {
    return posix(dir)
        ? new FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(FILE)}
        : NONE;
  }

  /**
   * Creates {@code dir} (its parents as the umask says) if it is missing, and makes it and every
   * file in it its owner's alone: files an earlier version created under the umask are narrowed.
   */
  static void prepareDirectory(Path dir) throws IOException {
    Path parent = dir.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    try {
      Files.createDirectory(dir, posix(parent) ? new FileAttribute<?>[] {
          PosixFilePermissions.asFileAttribute(DIRECTORY)} : NONE);
    } catch (FileAlreadyExistsException e) {
      if (!Files.isDirectory(dir)) {
        throw e;
      }
    }
    if (!posix(dir)) {
      return;
    }
    Files.setPosixFilePermissions(dir, DIRECTORY);
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
      for (Path file : files) {
        if (Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)
            && !Files.getPosixFilePermissions(file, LinkOption.NOFOLLOW_LINKS).equals(FILE)) {
          Files.setPosixFilePermissions(file, FILE);
        }
      }
    }
  }

  private static boolean posix(Path path) {
    return path != null
        && Files.getFileAttributeView(path, PosixFileAttributeView.class) != null;
  }
}
