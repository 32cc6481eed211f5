package dev.kvcache.disk.tool;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.BlockKey;
import dev.kvcache.disk.DiskFiles;
import dev.kvcache.disk.DiskTier;
import dev.kvcache.disk.DiskTierConfig;
import dev.kvcache.disk.SyncPolicy;
import dev.kvcache.testkit.Payloads;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

public class DiskToolTest {

  @TempDir Path temp;

  /** Exit code and output of one run of the tool. */
  public record Run(int exit, String out, String err) {}

  public static Run tool(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int exit = DiskTool.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
    return new Run(exit, out.toString(), err.toString());
  }

  private DiskTierConfig config(Path dir) {
    return DiskTierConfig.builder(dir, 64L << 20).superBlockBytes(4L << 20).minFreeBytes(0)
        .syncPolicy(SyncPolicy.NONE).build();
  }

  private Path directoryWithBlocks(int n) throws IOException {
    Path dir = temp.resolve("d");
    try (DiskTier tier = DiskTier.open(config(dir))) {
      for (int i = 0; i < n; i++) {
        BlockKey key = Payloads.key(i);
        tier.put(key, Payloads.of(key, 1, 100_000));
      }
    }
    return dir;
  }

  @Test
  void aHealthyDirectoryVerifiesClean() throws IOException {
    Path dir = directoryWithBlocks(100);
    Run run = tool("verify", dir.toString());
    assertThat(run.exit()).isZero();
    assertThat(run.out()).contains("100 intact blocks, 0 damaged")
        .contains("index: 100 blocks, 100 intact, 0 damaged, 0 truncated, 0 missing").contains("clean");
    assertThat(run.err()).contains("verifying sb-");
  }

  @Test
  void aDamagedBlockFailsVerification() throws IOException {
    Path dir = directoryWithBlocks(10);
    Path sb = DiskFiles.superBlocks(dir).get(0);
    try (FileChannel ch = FileChannel.open(sb, StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.wrap(new byte[] {1, 2, 3}), 4096 + 5000);
    }
    Run run = tool("verify", dir.toString());
    assertThat(run.exit()).isEqualTo(1);
    assertThat(run.out()).contains("damaged: block").contains("1 damaged, 0 truncated, 0 missing")
        .contains("DAMAGED");
  }

  private static void damage(Path file, long at) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.wrap(new byte[] {1, 2, 3}), at);
    }
  }

  @Test
  void aDamagedBlockARebuildLeftOutFailsVerification() throws IOException {
    Path dir = directoryWithBlocks(10);
    Files.delete(dir.resolve("index.kvx")); // no checkpoint and no journal: rebuilt from records
    damage(DiskFiles.superBlocks(dir).get(0), 4096 + 5000);
    Run run = tool("verify", dir.toString());
    assertThat(run.exit()).isEqualTo(1);
    assertThat(run.out()).contains("rebuilt from the records")
        .contains("fails its checksum; the index was built from the records without it")
        .contains("10 blocks, 9 intact, 1 damaged, 0 truncated, 0 missing")
        .contains("DAMAGED");
  }

  @Test
  void aDamagedBlockNewerThanTheMetadataFailsVerification() throws IOException {
    Path dir = directoryWithBlocks(10);
    Path older = temp.resolve("index-of-10.kvx");
    Files.copy(dir.resolve("index.kvx"), older);
    try (DiskTier tier = DiskTier.open(config(dir))) {
      for (int i = 10; i < 15; i++) {
        BlockKey key = Payloads.key(i);
        tier.put(key, Payloads.of(key, 1, 100_000));
      }
    }
    // the checkpoint of the first ten: the last five are found in the records (roll-forward)
    Files.copy(older, dir.resolve("index.kvx"), StandardCopyOption.REPLACE_EXISTING);
    // the reopen started a second super-block; its third record's payload: each record has its
    // pages to itself (direct writes), a header page and 25 of payload
    damage(DiskFiles.superBlocks(dir).get(1), 8192 + 2 * 106_496 + 5000);
    Run run = tool("verify", dir.toString());
    assertThat(run.exit()).isEqualTo(1);
    assertThat(run.out()).contains("without it")
        .contains("index: 15 blocks, 14 intact, 1 damaged").contains("DAMAGED");
  }

  private static long lines(String out, String start) {
    return out.lines().filter(l -> l.startsWith(start)).count();
  }

  @Test
  void aTruncatedSuperBlockFailsVerificationNamingEachBlockCutOff() throws IOException {
    Path dir = directoryWithBlocks(100); // three super-blocks
    Path last = DiskFiles.superBlocks(dir).get(DiskFiles.superBlocks(dir).size() - 1);
    try (FileChannel ch = FileChannel.open(last, StandardOpenOption.WRITE)) {
      ch.truncate(ch.size() / 2);
    }
    Run run = tool("verify", dir.toString());
    assertThat(run.exit()).isEqualTo(1);
    long truncated = lines(run.out(), "truncated: block");
    assertThat(truncated).isPositive();
    assertThat(run.out()).contains("0 damaged, " + truncated + " truncated, 0 missing")
        .contains("index: 100 blocks, " + (100 - truncated) + " intact").contains("DAMAGED");
  }

  @Test
  void aDeletedSuperBlockFailsVerificationNamingEachBlockInIt() throws IOException {
    Path dir = directoryWithBlocks(100);
    Files.delete(DiskFiles.superBlocks(dir).get(0));
    Run run = tool("verify", dir.toString());
    assertThat(run.exit()).isEqualTo(1);
    long missing = lines(run.out(), "missing: block");
    assertThat(missing).isBetween(30L, 50L); // the 4 MiB super-block held about 40 blocks
    assertThat(run.out()).contains("0 damaged, 0 truncated, " + missing + " missing")
        .contains("DAMAGED");
  }

  @Test
  void aSuperBlockWithADamagedHeaderFailsVerification() throws IOException {
    Path dir = directoryWithBlocks(100);
    try (FileChannel ch = FileChannel.open(DiskFiles.superBlocks(dir).get(1), StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.wrap(new byte[] {(byte) 0xff}), 0);
    }
    Run run = tool("verify", dir.toString());
    assertThat(run.exit()).isEqualTo(1);
    long damaged = lines(run.out(), "damaged: block");
    assertThat(damaged).isBetween(30L, 50L);
    assertThat(run.out()).contains(damaged + " damaged, 0 truncated, 0 missing")
        .contains("super-blocks with a damaged header");
  }

  @Test
  void statsDescribeTheDirectory() throws IOException {
    Path dir = directoryWithBlocks(30);
    Run run = tool("stats", dir.toString());
    assertThat(run.exit()).isZero();
    assertThat(run.out()).contains("blocks            30 (3000000 bytes decoded)");
  }

  @Test
  void rebuildRecoversTheIndexFromTheRecords() throws IOException {
    Path dir = directoryWithBlocks(20);
    try (DiskTier tier = DiskTier.open(config(dir))) {
      tier.delete(Payloads.key(3));
    }
    Files.delete(dir.resolve("index.kvx"));
    Run run = tool("rebuild", dir.toString());
    assertThat(run.exit()).isZero();
    assertThat(run.out()).contains("19 blocks");
    try (DiskTier tier = DiskTier.open(config(dir))) {
      assertThat(tier.stats().blocks()).isEqualTo(19);
      assertThat(tier.contains(Payloads.key(3))).isFalse();
      try (var lease = tier.get(Payloads.key(7))) {
        assertThat(Payloads.verify(Payloads.key(7), lease.bytes())).isEqualTo(1);
      }
    }
    assertThat(tool("verify", dir.toString()).exit()).isZero();
  }

  @Test
  void aDirectoryInUseOrMissingIsRefusedClearly() throws IOException {
    Path dir = temp.resolve("open");
    try (DiskTier tier = DiskTier.open(config(dir))) {
      Run run = tool("verify", dir.toString());
      assertThat(run.exit()).isEqualTo(2);
      assertThat(run.err()).contains("already in use");
    }
    Run missing = tool("stats", temp.resolve("nope").toString());
    assertThat(missing.exit()).isEqualTo(2);
    assertThat(missing.err()).contains("is not a directory");
    assertThat(tool("frobnicate").exit()).isEqualTo(2);
  }
}
