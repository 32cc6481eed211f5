package dev.kvcache.bench;

import dev.kvcache.BlockKey;
import dev.kvcache.PutStatus;
import dev.kvcache.disk.DiskTier;
import dev.kvcache.disk.DiskTierConfig;
import dev.kvcache.disk.SyncPolicy;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
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

/**
 * Time to open a disk tier directory holding {@code blocks} small blocks: after a clean close
 * ({@code afterClose}: the checkpoint alone) and after a crash ({@code afterCrash}: a copy of the
 * directory taken while the tier was open, so the journal since the last checkpoint is replayed).
 * The set-up writes the blocks once per fork (untimed).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class DiskReopenBenchmark {

  @Param({"1000000"})
  public int blocks;

  /** Where the directories go; the work tree's disk by default. */
  @Param({"target/disk-reopen"})
  public String baseDir;

  private Path clean;
  private Path crashImage;
  private Path crashed;
  private boolean crashedOpened = true;
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
    crashed = base.resolve("crashed");
    ByteBuffer payload = Blocks.randomDirect(64, 1);
    try (DiskTier tier = DiskTier.open(config(clean))) {
      for (int i = 0; i < blocks; i++) {
        if (tier.put(BlockKey.of(0x5eed, i), payload) != PutStatus.STORED) {
          throw new IllegalStateException("put " + i + " was not stored");
        }
      }
      Blocks.copyTree(clean, crashImage, "lock");
    }
  }

  /** Gives {@link #afterCrash} a fresh copy of the crash image (opening one repairs it). */
  @Setup(Level.Invocation)
  public void freshCrashImage() throws IOException {
    if (crashedOpened) {
      Blocks.deleteTree(crashed);
      Blocks.copyTree(crashImage, crashed, "lock");
      crashedOpened = false;
    }
  }

  @Benchmark
  public DiskTier afterClose() throws IOException {
    return opened = DiskTier.open(config(clean));
  }

  @Benchmark
  public DiskTier afterCrash() throws IOException {
    crashedOpened = true;
    return opened = DiskTier.open(config(crashed));
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
