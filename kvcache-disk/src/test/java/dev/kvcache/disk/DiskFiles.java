package dev.kvcache.disk;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/** The files a disk tier keeps in its directory, as tests look for them. */
public final class DiskFiles {

  private DiskFiles() {}

  /** The super-block files in {@code dir}, oldest first (their names hold their ids). */
  public static List<Path> superBlocks(Path dir) {
    try (Stream<Path> files = Files.list(dir)) {
      return files.filter(f -> f.getFileName().toString().endsWith(".kvsb")).sorted().toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
