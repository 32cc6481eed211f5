package dev.kvcache.bench;

import dev.kvcache.BlockKey;
import dev.kvcache.BlockLease;
import dev.kvcache.BlockWriter;
import dev.kvcache.GetStatus;
import dev.kvcache.Namespace;
import dev.kvcache.PrefixPin;
import dev.kvcache.PutStatus;
import dev.kvcache.disk.DiskTier;
import dev.kvcache.disk.DiskTierConfig;
import dev.kvcache.disk.SyncPolicy;
import dev.kvcache.disk.device.MemoryDevice;
import dev.kvcache.seal.MasterKeys;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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
 * Put and get throughput of the disk tier beside raw file IO of the same bytes, on the file system
 * of {@code baseDir} (the work tree's disk, or tmpfs under {@code /dev/shm}), with the files in
 * the page cache.
 *
 * <ul>
 *   <li>{@code put} stores blocks under new keys, each with new content, into a tier of
 *       {@code 2 × workingSetBytes} without forcing (sync policy {@code NONE}): once full, the
 *       tier drops its oldest super-block for every new one. {@code baselinePut} writes the same
 *       bytes with {@code FileChannel.write} into a series of new files of the tier's super-block
 *       size, deleting the oldest beyond the same capacity ({@link RotatingFiles}).
 *   <li>{@code writerPut} stores the same blocks in parts of 16 KiB (an HTTP/2 DATA frame) through
 *       the tier's {@link BlockWriter}, which writes each part to its place in the record;
 *       {@code gatheredPut} does what a writer that cannot write in place does (the {@code KvCache}
 *       default): gathers the parts in a heap buffer of the whole block, then puts it.
 *   <li>{@code getInto} copies a stored block into a direct buffer after checking its checksum;
 *       {@code leaseGet} checks the checksum and reads one word through the zero-copy view;
 *       {@code baselineGet} copies the same bytes out of a mapped plain file.
 *   <li>{@code prefixPin} pins a run of 16 stored blocks ({@code pinPrefix}) and lets it go, the
 *       lookup of an engine that loads them next; {@code prefixLeases} leases the same blocks one
 *       {@code get} each, which is what a pin of the tier did before it had its own (each block
 *       read and checked at the lookup). {@code prefixPinLoad} and {@code prefixLeasesLoad} also
 *       copy every block into a direct buffer: the lookup and the load together.
 *   <li>With {@code directWrites=true} the tier writes payloads past the page cache; {@code
 *       baselinePut} stays the page cache's.
 *   <li>With {@code sealed=true} the blocks' namespace is sealed ({@link
 *       DiskTierConfig.Builder#sealing}): each put seals its block with AES-256-GCM before writing
 *       it, each read opens it; the keys are in that namespace either way.
 *   <li>With {@code device=memory} the tier's files are in memory ({@code MemoryDevice}: no system
 *       call), so {@code put} and {@code getInto} measure the tier's own cost;
 *       {@code baselineCopy} copies the same bytes from one direct buffer to another, the floor
 *       both are compared with.
 * </ul>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class DiskThroughputBenchmark {

  @Param({"262144", "2097152", "33554432"})
  public int blockSizeBytes;

  /** Where the files go: the work tree's disk, or tmpfs. */
  @Param({"target/disk-io", "/dev/shm/kvcache-disk-io"})
  public String baseDir;

  @Param({"1073741824"})
  public long workingSetBytes;

  /** The tier's storage device: the file system under {@code baseDir}, or memory. */
  @Param({"file"})
  public String device;

  /**
   * Whether the tier writes block payloads past the page cache ({@code O_DIRECT}): its reads of
   * them then come from the device, not the page cache.
   */
  @Param({"false"})
  public boolean directWrites;

  /** Whether the blocks' namespace is sealed at rest. */
  @Param({"false"})
  public boolean sealed;

  private static final Namespace NS = Namespace.of("bench", "bf16", "tp0of1", "disk");
  /** A master key for the sealed runs: 32 bytes of 7, base64. */
  private static final String MASTER_KEY = "1:BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";

  /** Blocks of the prefixes {@code prefix*} look up. */
  private static final int PREFIX_BLOCKS = 16;
  private static final Duration PIN_TIMEOUT = Duration.ofSeconds(30);

  /** Parts a block arrives in for {@code writerPut} and {@code gatheredPut}: one HTTP/2 DATA frame. */
  private static final int PART_BYTES = 16 << 10;

  private Path base;
  private long superBlockBytes;
  private DiskTier tier;
  private ByteBuffer src;
  private ByteBuffer dst;
  private int blocks;
  private int next;
  private long counter;

  private FileChannel plainFile;
  private MappedByteBuffer plain;

  private RotatingFiles baselineFiles;

  @Setup(Level.Trial)
  public void setUp(BenchmarkParams params) throws IOException {
    base = Path.of(baseDir).toAbsolutePath();
    Blocks.deleteTree(base);
    Files.createDirectories(base);
    blocks = Blocks.blocksIn(workingSetBytes, blockSizeBytes);
    superBlockBytes = workingSetBytes / 4; // 8 in the capacity: 256 MiB, the default, for 1 GiB
    src = Blocks.randomDirect(blockSizeBytes, 11);
    dst = ByteBuffer.allocateDirect(blockSizeBytes);
    DiskTierConfig.Builder config = DiskTierConfig.builder(base.resolve("tier"),
        2 * workingSetBytes)
        .superBlockBytes(superBlockBytes).maxBlockBytes(blockSizeBytes).minFreeBytes(0)
        .syncPolicy(SyncPolicy.NONE).scrubBytesPerSecond(0).directWrites(directWrites);
    if (sealed) {
      config.sealing(MasterKeys.parse(MASTER_KEY), List.of(NS));
    }
    if (device.equals("memory")) {
      config.device(new MemoryDevice(3 * workingSetBytes));
    } else if (!device.equals("file")) {
      throw new IllegalArgumentException("device is 'file' or 'memory', got " + device);
    }
    tier = DiskTier.open(config.build());
    if (params.getBenchmark().endsWith("baselinePut")) {
      baselineFiles = new RotatingFiles(base.resolve("baseline"), superBlockBytes, 2 * workingSetBytes);
    }
    if (params.getBenchmark().endsWith("Get") || params.getBenchmark().endsWith("getInto")
        || params.getBenchmark().contains(".prefix")) {
      plainFile = FileChannel.open(base.resolve("plain"), StandardOpenOption.CREATE,
          StandardOpenOption.READ, StandardOpenOption.WRITE);
      plain = plainFile.map(FileChannel.MapMode.READ_WRITE, 0, (long) blocks * blockSizeBytes);
      for (int i = 0; i < blocks; i++) {
        src.putInt(0, i);
        if (tier.put(BlockKey.of(NS, 2, i), src) != PutStatus.STORED) {
          throw new IllegalStateException("put " + i + " was not stored");
        }
        plain.put(i * blockSizeBytes, src, 0, blockSizeBytes);
      }
      plain.force();
    }
  }

  private int nextBlock() {
    int i = next;
    next = i + 1 == blocks ? 0 : i + 1;
    return i;
  }

  @Benchmark
  public PutStatus put() {
    long n = counter++;
    src.putLong(0, n);
    return tier.put(BlockKey.of(NS, 3, n), src);
  }

  @Benchmark
  public PutStatus writerPut() {
    long n = counter++;
    src.putLong(0, n);
    try (BlockWriter writer = tier.writer(BlockKey.of(NS, 3, n), blockSizeBytes)) {
      for (int at = 0; at < blockSizeBytes; at += PART_BYTES) {
        writer.write(src.duplicate().position(at).limit(Math.min(blockSizeBytes, at + PART_BYTES)));
      }
      return writer.commit();
    }
  }

  @Benchmark
  public PutStatus gatheredPut() {
    long n = counter++;
    src.putLong(0, n);
    ByteBuffer whole = ByteBuffer.allocate(blockSizeBytes);
    for (int at = 0; at < blockSizeBytes; at += PART_BYTES) {
      whole.put(at, src, at, Math.min(PART_BYTES, blockSizeBytes - at));
    }
    return tier.put(BlockKey.of(NS, 3, n), whole);
  }

  @Benchmark
  public int baselinePut() throws IOException {
    src.putLong(0, counter++);
    return baselineFiles.write(src);
  }

  @Benchmark
  public ByteBuffer baselineCopy() {
    src.putLong(0, counter++);
    return dst.clear().put(src.duplicate());
  }

  @Benchmark
  public GetStatus getInto() {
    return tier.getInto(BlockKey.of(NS, 2, nextBlock()), dst.clear());
  }

  @Benchmark
  public long leaseGet() {
    try (BlockLease lease = tier.get(BlockKey.of(NS, 2, nextBlock()))) {
      return lease.bytes().getLong(0);
    }
  }

  /** The run of {@link #PREFIX_BLOCKS} keys from the next block (wrapping round). */
  private List<BlockKey> nextPrefix() {
    BlockKey[] keys = new BlockKey[PREFIX_BLOCKS];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = BlockKey.of(NS, 2, nextBlock());
    }
    return List.of(keys);
  }

  @Benchmark
  public int prefixPin() {
    try (PrefixPin pin = tier.pinPrefix(nextPrefix(), PIN_TIMEOUT)) {
      return pin.blocks();
    }
  }

  @Benchmark
  public int prefixLeases() {
    int n = 0;
    for (BlockKey key : nextPrefix()) {
      try (BlockLease lease = tier.get(key)) {
        n += lease.status() == GetStatus.HIT ? 1 : 0;
      }
    }
    return n;
  }

  @Benchmark
  public int prefixPinLoad() {
    int n = 0;
    try (PrefixPin pin = tier.pinPrefix(nextPrefix(), PIN_TIMEOUT)) {
      for (int i = 0; i < pin.blocks(); i++) {
        n += pin.getInto(i, dst.clear()) == GetStatus.HIT ? 1 : 0;
      }
    }
    return n;
  }

  @Benchmark
  public int prefixLeasesLoad() {
    List<BlockLease> leases = new ArrayList<>(PREFIX_BLOCKS);
    try {
      for (BlockKey key : nextPrefix()) {
        leases.add(tier.get(key));
      }
      int n = 0;
      for (BlockLease lease : leases) {
        if (lease.status() == GetStatus.HIT) {
          dst.clear().put(lease.bytes());
          n++;
        }
      }
      return n;
    } finally {
      leases.forEach(BlockLease::close);
    }
  }

  @Benchmark
  public ByteBuffer baselineGet() {
    int i = nextBlock();
    return dst.clear().put(0, plain, (int) ((long) i * blockSizeBytes), blockSizeBytes);
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    tier.close();
    if (plainFile != null) {
      plainFile.close();
    }
    if (baselineFiles != null) {
      baselineFiles.close();
    }
    Blocks.deleteTree(base);
  }
}
