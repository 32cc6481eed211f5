package dev.kvcache.bench;

import dev.kvcache.BlockKey;
import dev.kvcache.PutStatus;
import dev.kvcache.disk.DiskTier;
import dev.kvcache.disk.DiskTierConfig;
import dev.kvcache.disk.SyncPolicy;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * Time to open a disk tier directory holding {@code blocks} small blocks: after a clean close
 * ({@code afterClose}: the checkpoint alone), after a crash ({@code afterCrash}: a copy of the
 * directory taken while the tier was open, so the journal since the last checkpoint is replayed),
 * and with the index lost ({@code afterIndexLoss}: the closed directory without its checkpoint and
 * journal, so every super-block is scanned). The set-up writes the blocks once per fork (untimed);
 * the last two open a fresh copy each time, since opening repairs the directory.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class DiskReopenBenchmark {

  @Param({"10000", "100000", "1000000"})
  public int blocks;

  /** Where the directories go; the work tree's disk by default. */
  @Param({"target/disk-reopen"})
  public String baseDir;

  private Path clean;
  private Path crashImage;
  private Path lostIndexImage;
  private Path opening;
  private DiskTier opened;

  private DiskTierConfig config(Path dir) {
    return DiskTierConfig.builder(dir, 4L << 30).superBlockBytes(64L << 20).minFreeBytes(0)
        .syncPolicy(SyncPolicy.NONE).build();
  }

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    Path base = Path.of(baseDir).toAbsolutePath();
    Blocks.deleteTree(base);
    clean = base.resolve("clean");
    crashImage = base.resolve("crash-image");
    lostIndexImage = base.resolve("lost-index-image");
    opening = base.resolve("opening");
    ByteBuffer payload = Blocks.randomDirect(64, 1);
    try (DiskTier tier = DiskTier.open(config(clean))) {
      for (int i = 0; i < blocks; i++) {
        if (tier.put(BlockKey.of(0x5eed, i), payload) != PutStatus.STORED) {
          throw new IllegalStateException("put " + i + " was not stored");
        }
      }
      Blocks.copyTree(clean, crashImage, "lock");
    }
    Blocks.copyTree(clean, lostIndexImage, "lock");
    try (Stream<Path> files = Files.list(lostIndexImage)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        if (!f.getFileName().toString().endsWith(".kvsb")) {
          Files.delete(f);
        }
      }
    }
  }

  /** Gives {@link #afterCrash} and {@link #afterIndexLoss} a fresh copy of their image. */
  @Setup(Level.Invocation)
  public void freshImage(BenchmarkParams params) throws IOException {
    Blocks.deleteTree(opening);
    if (params.getBenchmark().endsWith("afterCrash")) {
      Blocks.copyTree(crashImage, opening, "lock");
    } else if (params.getBenchmark().endsWith("afterIndexLoss")) {
      Blocks.copyTree(lostIndexImage, opening, "lock");
    }
  }

  @Benchmark
  public DiskTier afterClose() throws IOException {
    return opened = DiskTier.open(config(clean));
  }

  @Benchmark
  public DiskTier afterCrash() throws IOException {
    return opened = DiskTier.open(config(opening));
  }

  @Benchmark
  public DiskTier afterIndexLoss() throws IOException {
    return opened = DiskTier.open(config(opening));
  }

  @TearDown(Level.Invocation)
  public void closeOpened() {
    if (opened != null) {
      if (opened.stats().blocks() != blocks) {
        throw new IllegalStateException("reopened with " + opened.stats().blocks() + " blocks");
      }
      opened.close();
      opened = null;
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    Blocks.deleteTree(Path.of(baseDir).toAbsolutePath());
  }
}
