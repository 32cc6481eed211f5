package dev.kvcache.testkit;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A small file system of each test's own, to fill up: a tmpfs of a given size mounted on a new
 * temporary directory before each test and unmounted after it. Register it with {@code
 * @RegisterExtension final Tmpfs small = new Tmpfs("16m");}. Mounting needs root; where it fails
 * the test is skipped, saying why.
 */
public final class Tmpfs implements BeforeEachCallback, AfterEachCallback {

  private final String size;
  private Path dir;

  /** A tmpfs of {@code size}, in mount's form (such as {@code 16m}). */
  public Tmpfs(String size) {
    this.size = size;
  }

  /** Where the file system is mounted. */
  public Path path() {
    return dir;
  }

  @Override
  public void beforeEach(ExtensionContext context) throws IOException, InterruptedException {
    dir = Files.createTempDirectory("kvcache-tmpfs");
    Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs",
        dir.toString()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    if (p.waitFor() != 0) {
      Files.delete(dir);
      Assumptions.abort("cannot mount a small tmpfs (needs root): " + out);
    }
  }

  /** Unmounts lazily (should a file still be open), then removes the directory. */
  @Override
  public void afterEach(ExtensionContext context) throws IOException, InterruptedException {
    if (dir != null && Files.exists(dir)) {
      new ProcessBuilder("umount", "-l", dir.toString()).inheritIO().start().waitFor();
      Files.delete(dir);
    }
  }

  /**
   * Writes a new file until its file system is full.
   *
   * @throws AssertionError if writing fails for another reason than the lack of space
   */
  public static void fill(Path file) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      ByteBuffer chunk = ByteBuffer.allocate(4096);
      while (true) {
        ch.write(chunk.clear());
      }
    } catch (IOException e) {
      if (e.getMessage() == null || !e.getMessage().contains("No space left")) {
        throw new AssertionError("filling " + file + " failed for another reason than space", e);
      }
    }
  }
}
