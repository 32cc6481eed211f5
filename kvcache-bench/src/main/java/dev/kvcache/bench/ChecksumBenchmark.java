package dev.kvcache.bench;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;
import net.jpountz.xxhash.XXHash32;
import net.jpountz.xxhash.XXHash64;
import net.jpountz.xxhash.XXHashFactory;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The chunk checksum candidates over one chunk of {@code chunkSizeBytes} in direct memory, as the
 * codec checksums a decoded chunk: the JDK's CRC32C (hardware-accelerated intrinsic), and lz4-java's
 * xxHash32 and xxHash64 (native when its library loads). {@code copy} copies the same bytes, for
 * scale.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class ChecksumBenchmark {

  @Param({"65536", "262144", "1048576"})
  public int chunkSizeBytes;

  private final CRC32C crc = new CRC32C();
  private final XXHash32 xx32 = XXHashFactory.fastestInstance().hash32();
  private final XXHash64 xx64 = XXHashFactory.fastestInstance().hash64();
  private ByteBuffer chunk;
  private ByteBuffer target;

  @Setup(Level.Trial)
  public void setUp() {
    chunk = Blocks.randomDirect(chunkSizeBytes, 3);
    target = ByteBuffer.allocateDirect(chunkSizeBytes);
  }

  @Benchmark
  public ByteBuffer copy() {
    return target.clear().put(0, chunk, 0, chunkSizeBytes);
  }

  @Benchmark
  public long crc32c() {
    crc.reset();
    crc.update(chunk.duplicate());
    return crc.getValue();
  }

  @Benchmark
  public int xxHash32() {
    return xx32.hash(chunk, 0, chunkSizeBytes, 0);
  }

  @Benchmark
  public long xxHash64() {
    return xx64.hash(chunk, 0, chunkSizeBytes, 0);
  }
}
