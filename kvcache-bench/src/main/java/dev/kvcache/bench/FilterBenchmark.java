package dev.kvcache.bench;

import dev.kvcache.codec.Filter;
import java.io.IOException;
import java.nio.ByteBuffer;
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

/**
 * The filters alone, on one chunk of real KV tensors held in heap arrays as the codec holds it:
 * forward ({@code apply}) and inverse ({@code remove}), beside {@code copy}, a plain copy of the
 * same bytes between the same arrays. Each operation moves {@code chunkSizeBytes} bytes.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class FilterBenchmark {

  @Param({"262144"})
  public int chunkSizeBytes;

  @Param({"BYTE_SHUFFLE_2", "BIT_SHUFFLE_2"})
  public Filter filter;

  /** Where the shared KV tensors are, relative to the working directory. */
  @Param({"../shared/data/kv"})
  public String dataDir;

  private byte[] data;
  private byte[] scratch;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    ByteBuffer block = Blocks.kvTensors(dataDir, "kv_prose_bf16", chunkSizeBytes);
    data = new byte[chunkSizeBytes];
    block.get(0, data);
    scratch = new byte[chunkSizeBytes];
  }

  @Benchmark
  public byte[] copy() {
    System.arraycopy(data, 0, scratch, 0, chunkSizeBytes);
    return scratch;
  }

  @Benchmark
  public byte[] apply() {
    // the bit shuffles work in place: the chunk is transformed again each call, at the same cost
    return filter.apply(data, chunkSizeBytes, scratch);
  }

  @Benchmark
  public byte[] remove() {
    return filter.remove(data, chunkSizeBytes, scratch);
  }
}
