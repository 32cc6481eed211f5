package dev.kvcache.bench;

import dev.kvcache.BlockKey;
import dev.kvcache.GetStatus;
import dev.kvcache.KvCache;
import dev.kvcache.PutStatus;
import dev.kvcache.disk.DiskTier;
import dev.kvcache.disk.DiskTierConfig;
import dev.kvcache.disk.SyncPolicy;
import dev.kvcache.tiered.Durability;
import dev.kvcache.tiered.KvCacheBuilder;
import dev.kvcache.tiered.TieredCache;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
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
 * The tiered cache against the single tiers it is built from, on a working set of {@code
 * workingSetBytes}, with the disk tier's files on the work tree's disk and in the page cache.
 *
 * <ul>
 *   <li>{@code stack=ram+disk}: a RAM tier of half the working set over a disk tier; reads of
 *       random blocks are served half by RAM, half by disk (each disk hit promoted, evicting another
 *       block to the spill queue); {@code ram+disk-no-promotion} leaves disk hits on disk.
 *   <li>{@code stack=ram}: a RAM tier that holds the whole working set (the RAM-tier figures).
 *   <li>{@code stack=disk}: the disk tier alone (the disk-tier figures); {@code disk-sync} with
 *       sync policy {@code ALWAYS}.
 *   <li>{@code stack=ram+disk-write-behind}, {@code ram+disk-write-through}: {@code ram+disk} under
 *       those {@link Durability} modes ({@code ram+disk} is {@link Durability#RAM_FIRST}); {@code
 *       ram+disk-write-through-sync} with the disk tier's sync policy {@code ALWAYS}, beside {@code
 *       disk-sync}.
 * </ul>
 *
 * {@code getInto} copies a random block of the working set into a direct buffer; {@code put} stores
 * a block under a new key, so that every put evicts: in {@code ram+disk} the evicted block goes
 * through the spill queue to disk while puts go on (sync policy {@code NONE}). The split of hits
 * between tiers is printed at the end of each trial.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class TieredCacheBenchmark {

  @Param({"ram+disk", "ram+disk-no-promotion", "ram", "disk"})
  public String stack;

  @Param({"262144", "2097152"})
  public int blockSizeBytes;

  @Param({"1073741824"})
  public long workingSetBytes;

  @Param({"target/tiered-bench"})
  public String baseDir;

  private Path base;
  private KvCache cache;
  private ByteBuffer src;
  private ByteBuffer dst;
  private int blocks;
  private long counter;
  private final SplittableRandom random = new SplittableRandom(5);

  @Setup(Level.Trial)
  public void setUp() throws IOException, InterruptedException {
    base = Path.of(baseDir).toAbsolutePath();
    Blocks.deleteTree(base);
    Files.createDirectories(base);
    blocks = Blocks.blocksIn(workingSetBytes, blockSizeBytes);
    src = Blocks.randomDirect(blockSizeBytes, 13);
    dst = ByteBuffer.allocateDirect(blockSizeBytes);
    cache = switch (stack) {
      case "ram" -> KvCacheBuilder.newBuilder().ramBytes(workingSetBytes + workingSetBytes / 4)
          .maxBlockBytes(blockSizeBytes).build();
      case "disk" -> disk(SyncPolicy.NONE);
      case "disk-sync" -> disk(SyncPolicy.ALWAYS);
      case "ram+disk", "ram+disk-no-promotion" -> KvCacheBuilder.newBuilder().ramBytes(workingSetBytes / 2)
          .maxBlockBytes(blockSizeBytes).lowerTier(disk(SyncPolicy.NONE))
          .promoteOnLowerHit(!stack.endsWith("no-promotion")).build();
      case "ram+disk-write-behind" -> ramOverDisk(Durability.WRITE_BEHIND, SyncPolicy.NONE);
      case "ram+disk-write-through" -> ramOverDisk(Durability.WRITE_THROUGH, SyncPolicy.NONE);
      case "ram+disk-write-through-sync" -> ramOverDisk(Durability.WRITE_THROUGH, SyncPolicy.ALWAYS);
      default -> throw new IllegalArgumentException("unknown stack " + stack);
    };
    for (int i = 0; i < blocks; i++) {
      src.putInt(0, i);
      if (cache.put(BlockKey.of(4, i), src) != PutStatus.STORED) {
        throw new IllegalStateException("put " + i + " was not stored");
      }
    }
    if (cache instanceof TieredCache tiered && !tiered.awaitSpills(Duration.ofMinutes(2))) {
      throw new IllegalStateException("spills did not finish");
    }
  }

  private KvCache ramOverDisk(Durability durability, SyncPolicy sync) throws IOException {
    return KvCacheBuilder.newBuilder().ramBytes(workingSetBytes / 2).maxBlockBytes(blockSizeBytes)
        .lowerTier(disk(sync)).durability(durability).build();
  }

  private DiskTier disk(SyncPolicy sync) throws IOException {
    return DiskTier.open(DiskTierConfig.builder(base.resolve("disk"), 2 * workingSetBytes)
        .superBlockBytes(workingSetBytes / 4).maxBlockBytes(blockSizeBytes).minFreeBytes(0)
        .syncPolicy(sync).directReads(false).build()); // reads from the page cache, as documented
  }

  @Benchmark
  public GetStatus getInto() {
    return cache.getInto(BlockKey.of(4, random.nextInt(blocks)), dst.clear());
  }

  @Benchmark
  public PutStatus put() {
    long n = counter++;
    src.putLong(0, n);
    return cache.put(BlockKey.of(5, n), src);
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    System.out.println();
    System.out.println("stats " + stack + ": " + cache.stats());
    if (cache instanceof TieredCache tiered) {
      System.out.println("tiered " + stack + ": " + tiered.tieredStats());
    }
    cache.close();
    Blocks.deleteTree(base);
  }
}
