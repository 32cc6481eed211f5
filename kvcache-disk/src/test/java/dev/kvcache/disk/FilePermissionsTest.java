package dev.kvcache.disk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.PutStatus;
import dev.kvcache.testkit.Payloads;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The tier's directory is {@code 0700} and its files {@code 0600} whatever the umask: blocks of
 * every namespace share the files, and no other local user may read them. The build runs under the
 * usual umask ({@code 022}), under which files are created {@code 0644} unless asked otherwise.
 */
class FilePermissionsTest {

  @TempDir Path temp;

  private static DiskTierConfig config(Path dir) {
    return DiskTierConfig.builder(dir, 64L << 20).superBlockBytes(1L << 20).minFreeBytes(0)
        .syncPolicy(SyncPolicy.ALWAYS).checkpointJournalBytes(64 << 10).build();
  }

  private static String mode(Path path) throws IOException {
    return PosixFilePermissions.toString(Files.getPosixFilePermissions(path));
  }

  private static List<Path> files(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.collect(Collectors.toList());
    }
  }

  @Test
  void theDirectoryAndEveryFileAreTheOwnersAlone() throws IOException {
    Path dir = temp.resolve("a").resolve("tier");
    try (DiskTier tier = DiskTier.open(config(dir))) {
      for (int i = 0; i < 2000; i++) { // several super-blocks, journals and checkpoints
        BlockKey key = Payloads.key(i);
        assertThat(tier.put(key, Payloads.of(key, 1, 4096))).isEqualTo(PutStatus.STORED);
      }
      assertThat(mode(dir)).isEqualTo("rwx------");
      List<Path> open = files(dir);
      assertThat(open).hasSizeGreaterThan(4);
      for (Path file : open) {
        assertThat(mode(file)).as("%s while open", file.getFileName()).isEqualTo("rw-------");
      }
    }
    for (Path file : files(dir)) {
      assertThat(mode(file)).as("%s after close", file.getFileName()).isEqualTo("rw-------");
    }
  }

  @Test
  void filesLeftReadableByOthersAreNarrowedOnOpen() throws IOException {
    Path dir = temp.resolve("tier");
    try (DiskTier tier = DiskTier.open(config(dir))) {
      BlockKey key = Payloads.key(1);
      tier.put(key, Payloads.of(key, 1, 4096));
    }
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    for (Path file : files(dir)) { // as an earlier version left them
      Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
    }
    try (DiskTier tier = DiskTier.open(config(dir))) {
      assertThat(mode(dir)).isEqualTo("rwx------");
      for (Path file : files(dir)) {
        assertThat(mode(file)).as(file.getFileName().toString()).isEqualTo("rw-------");
      }
    }
  }
}
