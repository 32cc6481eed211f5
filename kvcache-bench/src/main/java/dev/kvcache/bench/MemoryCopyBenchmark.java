package dev.kvcache.bench;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import net.openhft.chronicle.bytes.BytesStore;
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
 * The choice of memory behind the RAM tier: copying a block into and out of a region of plain
 * direct memory ({@link ByteBuffer}) against the same through a Chronicle Bytes native store.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class MemoryCopyBenchmark {

  @Param({"1048576", "33554432"})
  public int blockSizeBytes;

  @Param({"268435456"})
  public long regionBytes;

  private ByteBuffer region;
  private BytesStore<?, ?> chronicleRegion;
  private ByteBuffer src;
  private ByteBuffer dst;
  private BytesStore<?, ByteBuffer> chronicleDst;
  private int slots;
  private int next;

  @Setup(Level.Trial)
  public void setUp() {
    slots = Blocks.blocksIn(regionBytes, blockSizeBytes);
    long bytes = (long) slots * blockSizeBytes;
    region = ByteBuffer.allocateDirect((int) bytes);
    chronicleRegion = BytesStore.nativeStoreWithFixedCapacity(bytes);
    chronicleRegion.zeroOut(0, bytes);
    src = Blocks.randomDirect(blockSizeBytes, 1);
    dst = ByteBuffer.allocateDirect(blockSizeBytes);
    chronicleDst = BytesStore.wrap(dst);
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    chronicleRegion.releaseLast();
  }

  private long nextOffset() {
    next = (next + 1) % slots;
    return (long) next * blockSizeBytes;
  }

  @Benchmark
  public void directBufferWrite() {
    region.put((int) nextOffset(), src, 0, blockSizeBytes);
  }

  @Benchmark
  public void directBufferRead() {
    dst.put(0, region, (int) nextOffset(), blockSizeBytes);
  }

  @Benchmark
  public void chronicleWrite() {
    chronicleRegion.write(nextOffset(), src, 0, blockSizeBytes);
  }

  @Benchmark
  public void chronicleRead() {
    chronicleDst.write(0, chronicleRegion, nextOffset(), blockSizeBytes);
  }
}
