package dev.kvcache.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;

/**
 * A small file system of a test's own, to fill up: a tmpfs of a given size mounted on a directory.
 * Mounting needs root; where it fails the test is skipped, saying why.
 */
public final class Tmpfs {

  private Tmpfs() {}

  /** Mounts a tmpfs of {@code size} (such as {@code 16m}) on {@code dir}, creating it. */
  public static Path mount(Path dir, String size) throws IOException, InterruptedException {
    Files.createDirectories(dir);
    Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs",
        dir.toString()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    Assumptions.assumeTrue(p.waitFor() == 0, "cannot mount a small tmpfs (needs root): " + out);
    return dir;
  }

  /** Unmounts what {@link #mount} mounted on {@code dir} (lazily, should a file still be open). */
  public static void unmount(Path dir) throws IOException, InterruptedException {
    new ProcessBuilder("umount", "-l", dir.toString()).inheritIO().start().waitFor();
  }
}
