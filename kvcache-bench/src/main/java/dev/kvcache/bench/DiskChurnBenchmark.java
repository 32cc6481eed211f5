package dev.kvcache.bench;

import dev.kvcache.BlockKey;
import dev.kvcache.CacheStats;
import dev.kvcache.PutStatus;
import dev.kvcache.disk.DiskStats;
import dev.kvcache.disk.DiskTier;
import dev.kvcache.disk.DiskTierConfig;
import dev.kvcache.disk.SyncPolicy;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.SplittableRandom;
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
 * The disk tier under steady churn: puts of blocks under keys cycling through twice as many
 * keys as fit (so a key comes back after its block was evicted), with {@code readPercent} of operations reading a recently written block (which
 * makes it worth keeping when its super-block is reclaimed), with the default sync policy (a force
 * every second). Beside it, {@code filesBaseline} writes the same bytes into new plain files as
 * the tier writes super-blocks, forced every second too. After each iteration
 * the set-up prints the write amplification: bytes the tier wrote (records, rewrites, journal,
 * checkpoints) and bytes the process sent to the device ({@code /proc/self/io}), each over the
 * payload bytes of the puts.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class DiskChurnBenchmark {

  @Param({"262144"})
  public int blockSizeBytes;

  @Param({"536870912"})
  public long capacityBytes;

  @Param({"10"})
  public int readPercent;

  /** Where the tier's directory goes; the work tree's disk by default. */
  @Param({"target/disk-churn"})
  public String baseDir;

  private DiskTier tier;
  private RotatingFiles baselineFiles;
  private long lastForce = System.nanoTime();
  private ByteBuffer payload;
  private ByteBuffer readBuffer;
  private final SplittableRandom random = new SplittableRandom(7);
  private int keys;
  private long payloadBytes;
  private long counter;
  private long tierBytesAtStart;
  private long deviceBytesAtStart;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    Path base = Path.of(baseDir).toAbsolutePath();
    Blocks.deleteTree(base);
    tier = DiskTier.open(DiskTierConfig.builder(base.resolve("tier"), capacityBytes)
        .superBlockBytes(capacityBytes / 16).minFreeBytes(0).syncPolicy(SyncPolicy.PERIODIC).build());
    baselineFiles = new RotatingFiles(base.resolve("baseline"), capacityBytes / 16, capacityBytes);
    payload = Blocks.randomDirect(blockSizeBytes, 3);
    readBuffer = ByteBuffer.allocateDirect(blockSizeBytes);
    keys = (int) (2 * capacityBytes / blockSizeBytes);
  }

  @Setup(Level.Iteration)
  public void startCounting() throws IOException {
    payloadBytes = 0;
    tierBytesAtStart = tier.diskStats().bytesWritten();
    deviceBytesAtStart = Blocks.processBytesWritten();
  }

  @Benchmark
  public Object churn() {
    if (random.nextInt(100) < readPercent) {
      // a block written lately: its key is near the counter's
      long recent = Math.max(0, counter - 1 - random.nextInt(64));
      return tier.getInto(BlockKey.of(1, recent % keys), readBuffer.clear());
    }
    long n = counter++;
    payload.putLong(0, n); // every put is new content: none is skipped as unchanged
    PutStatus status = tier.put(BlockKey.of(1, n % keys), payload);
    if (status == PutStatus.STORED) {
      payloadBytes += blockSizeBytes;
    }
    return status;
  }

  /**
   * The same bytes written to new files of the tier's super-block size, the oldest deleted beyond
   * the same capacity ({@link RotatingFiles}), forced once a second as the tier's default policy
   * forces.
   */
  @Benchmark
  public int filesBaseline() throws IOException {
    payload.putLong(0, counter++);
    int n = baselineFiles.write(payload);
    long now = System.nanoTime();
    if (now - lastForce > 1_000_000_000L) {
      baselineFiles.force();
      lastForce = now;
    }
    return n;
  }

  @TearDown(Level.Iteration)
  public void report() throws IOException {
    if (payloadBytes == 0) {
      return;
    }
    DiskStats disk = tier.diskStats();
    CacheStats stats = tier.stats();
    System.out.printf("%nwrite amplification: tier=%.3f device=%.3f payloadBytes=%d rewritten=%d evictions=%d%n",
        (double) (disk.bytesWritten() - tierBytesAtStart) / payloadBytes,
        (double) (Blocks.processBytesWritten() - deviceBytesAtStart) / payloadBytes,
        payloadBytes, stats.bytesCompacted(), stats.evictions());
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    tier.close();
    baselineFiles.close();
    Blocks.deleteTree(Path.of(baseDir).toAbsolutePath());
  }
}
